"""`crashcheck replay BUG.json`: rerun one bug record and print it.

Owns replaying: the record's history is traced again with the same driver, the crash point and
crash state it names are checked again, and the oracle judges the result; a nondeterminism
record's history is checked a few times and the runs compared (harness/check/determinism.py). Exit status 1 when the
bug reproduces (as `fuzz` exits 1 on bugs), 0 only when it no longer does (fixed) on the very run
the record was made from (its `trace_digest`, harness/check/trace_digest.py), 3 when the replay
ran differently (nondeterministic: the run parted from the recorded one), 2 on bad input,
including a record that cannot be replayed as recorded (a crash point or crash state the trace
of its history no longer has: the structure changed, or the record is corrupt).
"""
from __future__ import annotations

import argparse

from crashcheck.harness.core import defaults

from crashcheck.harness.check import determinism, torn_store, trace_digest, user_history

from crashcheck.harness.triage import record_formats

from crashcheck.harness.target import structures
from crashcheck.harness.core.errors import DriverFailure, UsageError
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.triage.records import region_prefix
from crashcheck.harness.triage.pmdk_calls import Calls, stack_text
from crashcheck.harness.render.report import site_text
from crashcheck.harness.check.session import history_text
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.check.threads import make_threaded
from crashcheck.harness.check.traced_run import RunFailure
from crashcheck.harness.target.tracers import pmemcheck_command
from crashcheck.specs import leaks as leak_policy
from crashcheck.specs.model import Model, with_load


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="rerun one bug record (from fuzz) and print it")
    p.add_argument("record", help="a bug record (RESULTS.bugs/<id>.json) or a results file with --id")
    p.add_argument("--id", help="which bug of a results file")
    p.add_argument("--warning", type=int, metavar="N",
                   help="instead, the Nth unconfirmed persistency race (race_warnings) of a results file")
    p.set_defaults(func=run)


def load_record(path: str, ident: str | None) -> dict:
    """The record to replay, checked (harness/triage/record_formats.py): UsageError names what is wrong."""
    return record_formats.load_record(path, ident)


def _ops(path: str, lines: list[str], what: str, structure: structures.Structure, model: Model) -> list:
    """The operations of LINES in MODEL's notation, each one the structure can run, or UsageError."""
    return user_history.parse_lines(path, lines, what, structure, model)


def _check_choice(path: str, what: str, cp, choice: tuple[int, ...]) -> None:
    """UsageError unless CHOICE is a crash state of crash point CP: one prefix length per pending
    unit, each at most the unit's length. A record made from another trace fails here."""
    if len(choice) != len(cp.units):
        raise UsageError(f"{path}: the {what} does not replay as recorded: crash point {cp.index} now has "
                         f"{len(cp.units)} pending units, the record chooses for {len(choice)} (the structure "
                         "or its build changed since the record was made, or the record is corrupt)")
    for j, (unit, k) in enumerate(zip(cp.units, choice)):
        if k >= unit.choices:
            raise UsageError(f"{path}: the {what} does not replay as recorded: choice {j} is {k}, "
                             f"a unit of {len(unit.pieces)} stores has {unit.choices} at crash point {cp.index}")


def _point(checker: Checker, path: str, trace, index: int, what: str):
    try:
        return checker.point_at(trace, index)
    except ValueError:
        raise UsageError(f"{path}: the {what} does not replay as recorded: the trace of its history has "
                         f"no crash point {index} (the structure changed, or the record is corrupt)") from None


NONDETERMINISM_RUNS = 3       # checks of the history when replaying a nondeterminism finding


def _replay_nondeterminism(s: structures.Structure, rec: dict, settings: Settings, ops: list) -> int:
    """Check the record's history a few times and compare each with the first, as fuzz did
    (harness/check/determinism.py): 1 if they differ; if every run did the same, 3 when the driver
    is the one the record was made with (its trace_digest's binary: it was seen to differ, so
    agreeing now proves nothing), 0 when it was rebuilt since (or, an older record, not known)."""
    with Checker(s, rec["bug"], settings) as checker:
        first = checker.check(ops)
        for n in range(2, NONDETERMINISM_RUNS + 1):
            again = checker.check(ops)
            diff = None
            if first.trace is not None and again.trace is not None:
                diff = determinism.trace_difference(first.trace, again.trace, not s.own_pool)
            if diff is None and not (first.partial or again.partial):
                diff = determinism.findings_difference(determinism.findings_key(first.findings),
                                                       determinism.findings_key(again.findings))
            if diff is not None:
                print(f"reproduced: nondeterminism: run 1 and run {n}: {diff[1]}")
                return 1
    recorded = (rec.get("trace_digest") or {}).get("binary")
    if recorded and recorded == trace_digest.file_digest(s.driver(rec["bug"])):
        # the same driver that was seen to differ once: nondeterminism comes and goes (the clock,
        # rand() seeded from it, addresses, thread timing), so runs that agree prove nothing fixed
        print(f"not reproducible: nondeterministic: {NONDETERMINISM_RUNS} checks of the history did the same "
              f"this time, but the same driver did not before, so no replay can say it is fixed"
              + determinism.ADVICE)
        return trace_digest.EXIT_NONDETERMINISTIC
    print(f"not reproduced: {NONDETERMINISM_RUNS} checks of the history did the same"
          + (" (the driver was rebuilt since the record: the code changed)" if recorded else
             " (the record has no trace_digest: whether this driver is the recorded one is not verified)"))
    return 0


def _again(checker: Checker, ops: list):
    """One more traced run of OPS (None if it fails): replay_parting compares two replays."""
    def trace_again():
        try:
            return checker.trace(ops)[0]
        except RunFailure:
            return None
    return trace_again


def not_reproduced(text: str, rec: dict, parted: trace_digest.Replayed | None) -> int:
    """The end of a replay whose crash state now passes (trace_digest.not_reproduced)."""
    lines, status = trace_digest.not_reproduced(text, rec.get("trace_digest"), parted)
    print("\n".join(lines))
    return status


def run(args: argparse.Namespace) -> int:
    if args.warning is not None:
        from crashcheck.harness.cli.replay_warning import replay
        return replay(args.record, args.warning)
    rec = load_record(args.record, args.id)
    if rec["program"] is not None:
        # a finding of `crashcheck run`: the user's program and commands, no structure
        from crashcheck.harness.run.program_run import replay
        return replay(rec)
    try:
        return _replay(args.record, rec)
    except DriverFailure as exc:
        raise UsageError(f"{args.record}: the record's history does not run on {rec['structure']}: "
                         f"{exc}") from None


def _replay(path: str, rec: dict) -> int:
    s = structures.get(rec["structure"])
    s.driver(rec["bug"])                    # an unknown seeded bug or an unbuilt driver: UsageError
    if rec["model"] not in s.models:
        raise UsageError(f"{path}: {s.name} is not checked under model {rec['model']}")
    if rec["spec_model"] != s.spec_model:
        raise UsageError(f"{path}: the record's history is in the {rec['spec_model']} model's notation, but "
                         f"{s.name} is judged against the {s.spec_model} model")
    model = s.model()
    settings = Settings(model=rec["model"], strategy=rec["strategy"], limit=rec["limit"], seed=rec["seed"],
                        atomic_unit=(rec["assumptions"] or {}).get("atomic_unit", defaults.ATOMIC_UNIT),
                        tracer=rec["tracer"])
    if settings.tracer == "pmemcheck":
        pmemcheck_command()     # the record was traced under pmemcheck: replay needs it too
    ops = with_load(_ops(path, rec["history"], "history", s, model), rec["load"])
    ops.load_traced = rec["load_traced"]     # an older record's crash points count the load's events
    if rec["threads"] > 1 and rec["thread_of"]:
        # a threaded history: the same sections, and the very schedule the fuzzer's run took
        if not s.thread_safe:
            raise UsageError(f"{path}: the record's history has {rec['threads']} threads, but {s.name} is "
                             "not thread-safe")
        sections = [[op for op, t in zip(ops, rec["thread_of"]) if t == k] for k in range(1, rec["threads"] + 1)]
        ops = make_threaded([op for op, t in zip(ops, rec["thread_of"]) if t == 0], sections,
                            rec["sched"] or "random:0", rec["schedule"])
    follow = _ops(path, rec["followup"], "followup", s, model)
    print(f"replaying {rec['id']}: {rec['class']} in {rec['structure']}"
          f"{' (seeded bug ' + rec['bug'] + ')' if rec.get('bug') else ''}, model {rec['model']}")
    print("history:" + (f" {rec['threads']} threads, schedule {rec['sched']}"
                        + (" (replayed from the record)" if rec["schedule"] else "")
                        if rec["threads"] > 1 else ""))
    for i, line in enumerate(rec["history"]):
        lane = f"t{rec['thread_of'][i]}  " if rec["threads"] > 1 and rec["thread_of"] else ""
        print(f"  {i:>3}  {lane}{line}")
    crash = rec["crash"]
    if rec["class"] == determinism.CLASS:
        return _replay_nondeterminism(s, rec, settings, ops)
    with Checker(s, rec["bug"], settings) as checker:
        try:
            trace, lines = checker.trace(ops)
        except RunFailure as exc:
            # the structure died or hung in the crash-free run (operation-crash, -hang)
            f = exc.finding
            same = f.cls == rec["class"]
            print(f"{'reproduced' if same else 'a different bug now'} without any crash: {f.cls}: {f.detail}")
            return 1
        parted = trace_digest.replay_parting(rec.get("trace_digest"), trace, _again(checker, ops),
                                             s.driver(rec["bug"]), not s.own_pool)
        if parted is not None and parted.parting.what == "path" and not parted.changed:
            # the same driver took another path: the record's crash point and state are not this run's
            print(f"not reproducible: nondeterministic: {parted.text}")
            print(f"  {s.name} does not do the same on the same history, so no replay can say whether the "
                  "bug is fixed" + determinism.ADVICE)
            return trace_digest.EXIT_NONDETERMINISTIC
        if crash.get("index") is None:
            # found by the crash-free run: run it again and see whether it still fails
            found = checker.crash_free_findings(ops, lines, trace)
            if found and found[0].cls == rec["class"]:
                print(f"reproduced without any crash: {found[0].cls}: {found[0].detail}")
                return 1
            if found:
                print(f"a different bug now, without any crash: {found[0].cls}: {found[0].detail}")
                return 1
            return not_reproduced("not reproduced: the crash-free run now agrees with the model and keeps the "
                                  "invariants", rec, parted)
        oracle = checker.oracle(ops, trace, lines, follow, aimed=False)   # the follow-up the record ran
        history_cp = None
        if rec.get("recovery_of"):
            # a crash inside recovery: rebuild the original post-crash image, trace its recovery
            orig = rec["recovery_of"]
            _check_choice(path, "original crash", _point(checker, path, trace, orig["index"], "original crash"),
                          tuple(orig["choice"]))
            history_cp, image = checker.image_at(trace, orig["index"], tuple(orig["choice"]))
            trace = checker.trace_recovery(trace, image)
            print(f"recovery of the crash state at event #{history_cp.event} was itself interrupted")
        cp = _point(checker, path, trace, crash["index"], "crash")
        # what the record says of the crash point, derived as harness/triage/records.py derives it
        kind = trace.events[cp.event].kind if cp.event < len(trace.events) else "end"
        if crash["event"] is not None and (cp.event, kind) != (crash["event"], crash["kind"]):
            raise UsageError(f"{path}: the crash does not replay as recorded: crash point {cp.index} is now "
                             f"the {kind} at event {cp.event}, the record's was the {crash['kind']} at event "
                             f"{crash['event']} (the structure or its build changed, or the record is corrupt)")
        choice = tuple(crash["choice"])
        _check_choice(path, "crash", cp, choice)
        [res] = checker.recheck(trace, cp.index, [choice], history_text(model, follow))
        torn = None
        if rec["class"] == torn_store.CLASS and history_cp is None and not oracle.verdict(cp, res).ok:
            # a torn store: the state fails, and passes with that store whole or not at all
            # (harness/check/torn_store.py), whatever the recovered state shows
            torn = torn_store.torn_of(
                trace, cp, choice, lambda cs: checker.recheck(trace, cp.index, cs, history_text(model, follow)),
                torn_store.passes_at(oracle, cp), "",
                checker.settings.options().atomic_unit)
    # a crash inside recovery is judged at the original crash; a threaded history by durable
    # linearizability of the History up to the crash (harness/check/crash_oracle.py)
    point = oracle.history_point(history_cp or cp)
    verdict = oracle.verdict(history_cp or cp, res)
    site = trace.site(trace.events[cp.event].site) if cp.event < len(trace.events) else None
    print(f"crash: before event #{cp.event}" + (f" at {site.describe()}" if site else "")
          + (f", during operation {point.inflight}" if point.inflight is not None else ""))
    calls = Calls(trace)      # a library built with the pass: the calls that led to its stores
    for p in cp.lost(choice):
        s_ = trace.site(trace.events[p.seq].site)
        print(f"  lost   #{p.seq} {region_prefix(p.region)}+{p.off:#x} {len(p.data)} bytes {p.data.hex()}  {s_.describe() if s_ else '?'}")
        call = calls.of(p.seq) if calls else None
        if call:
            print(f"         called from: {stack_text(call)}")
    if rec["class"] == "leak":
        objs = leak_policy.unreachable(res.result)
        if objs:
            attributed = leak_policy.attribute(trace, objs, cp.event)
            print(f"reproduced: leak: {leak_policy.describe(attributed)}")
            for o in attributed:
                print(f"  leaked +{o['off']:#x} {o['size']} bytes, allocated at {site_text(o.get('site'))}")
            return 1
        return not_reproduced("not reproduced: nothing leaks in this crash state any more", rec, parted)
    if not verdict.ok and rec["class"] == "persistency-race":
        # the race's crash state (the racing store lost) fails the way durable linearizability
        # says (harness/check/persistency_race.py): whatever the recovered state shows
        print(f"reproduced: persistency-race: the crash that loses the racing store: {verdict.cls}: {verdict.detail}")
        return 1
    if not verdict.ok and torn is not None:
        print(f"reproduced: {torn_store.CLASS}: {torn.describe(trace)}: {verdict.detail}")
        return 1
    if not verdict.ok and verdict.cls == rec["class"]:
        print(f"reproduced: {verdict.cls}: {verdict.detail}")
        return 1
    if not verdict.ok:
        print(f"a different bug now: {verdict.cls}: {verdict.detail}")
        return 1
    return not_reproduced("not reproduced: recovery now leaves an acceptable state", rec, parted)
