"""`crashcheck fuzz STRUCTURE...`: generate histories, crash them everywhere, report the bugs.

Owns the command line of a fuzz run, its progress display, its console summary, and writing the
results file, the per-bug records and the HTML report (all atomically), and the journal that
keeps every bug the moment it is found (harness/run/journal.py); `execute` does all of that for any
plan of targets on the executor --jobs/--dask chose (harness/run/executors.py), for `crashcheck
campaign` too. Exit status: 0 when nothing unexpected was found, 1 when bugs were found, 2 on a
usage or set-up error (or an internal error, after writing what was found), 128 + the signal
(130 for SIGINT, 143 for SIGTERM) when the run was interrupted, after writing the partial results.
"""
from __future__ import annotations

import argparse
import math
import os
import shlex
import signal
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.text import Text

from crashsim.persistency import MODELS, ModelOptions
from crashsim.states import STRATEGIES
from harness.core import defaults
from harness.run import executors
from harness.target import structures
from harness.core import workdir
from harness.core.budget import PROCESS_START, clear_pending_signal, deferred_signals, interrupt, quiet_interrupts
from harness.core.counts import big
from harness.core.errors import UsageError
from harness.run.fuzz import Config, TargetResult, run_plan
from harness.run.journal import Journal, journal_path
from harness.cli.outputs import check_outputs
from harness.check.threads import SCHED_KINDS
from harness.target.tracers import TRACERS, pmemcheck_command
from harness.render.report import write_run
from harness.core.settings import Settings
from harness.run.strategies import KEY_DISTRIBUTIONS, MIXES
from specs.oracle import CLASSES, CONCURRENT_CLASSES

# More worker processes than this many per core only adds contention (and forks per state).
MAX_JOBS_PER_CPU = 4
MAX_THREADS = 4                 # threads per history (--threads)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="fuzz structures with crash states and report bugs")
    p.add_argument("structures", nargs="+", metavar="STRUCTURE", help="one or more (see `crashcheck list`)")
    p.add_argument("--bug", help="fuzz this seeded-bug variant (one structure only)")
    p.add_argument("--model", choices=MODELS, default=None,
                   help="persistency model (default: the one the structure is built for, adr unless its "
                        "expect.json says eadr)")
    p.add_argument("--strategy", choices=STRATEGIES, default=None,
                   help=f"crash-state strategy (default {defaults.STRATEGY}: every legal state of a crash "
                        "point, in classes of what recovery reads; bounded: a sample of at most --limit "
                        "states, the default for a structure that maps its pool itself; exhaustive: every "
                        "state on its own)")
    p.add_argument("--limit", type=int, default=defaults.LIMIT,
                   help=f"per crash point: lazy's executions, bounded's states (default {defaults.LIMIT}); a "
                        "lazy point that needs more executions is partial and also gets bounded's sample")
    p.add_argument("--seed", type=int, default=defaults.SEED, help=f"run seed (default {defaults.SEED})")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--budget", type=float, help=f"seconds per structure (default {defaults.BUDGET_S:g})")
    g.add_argument("--examples", type=int, help="histories per structure (deterministic)")
    p.add_argument("--jobs", type=int, default=defaults.JOBS, help=f"parallel worker processes (default {defaults.JOBS})")
    p.add_argument("--dask", metavar="ADDRESS",
                   help="run on Dask distributed instead: tcp://HOST:8786 (a running scheduler) or local:N "
                        "(a LocalCluster of N worker processes here); needs crashcheck[dask]")
    p.add_argument("--max-ops", type=int, default=defaults.MAX_OPS, help=f"longest history (default {defaults.MAX_OPS})")
    p.add_argument("--keys", choices=KEY_DISTRIBUTIONS, default=defaults.KEYS, help="key distribution (map histories)")
    p.add_argument("--mix", choices=MIXES, default=defaults.MIX, help="operation mix (map histories)")
    p.add_argument("--threads", type=int, default=None, metavar="T",
                   help="threads per history, 1-4 (default 1, or the seeded bug's catalog count); "
                        "more than 1: run under the deterministic scheduler and check linearizability "
                        "(thread-safe structures only)")
    p.add_argument("--sched", choices=SCHED_KINDS, default="mixed",
                   help="the scheduler's strategy for threaded histories: random walk, PCT, stale (park a "
                        "thread until a word it read is written), or one of the three drawn for each history "
                        "(default mixed)")
    p.add_argument("--recovery-crashes", type=int, default=defaults.RECOVERY_CRASHES, metavar="N",
                   help=f"post-crash images per history whose recovery is crashed too (default "
                        f"{defaults.RECOVERY_CRASHES}; 0: off)")
    p.add_argument("--atomic-unit", type=int, default=defaults.ATOMIC_UNIT, metavar="BYTES",
                   help=f"failure-atomic unit: wider stores are split into pieces of this size that may "
                        f"persist apart (a power of two up to the line size; default {defaults.ATOMIC_UNIT})")
    p.add_argument("--tracer", choices=TRACERS, default=defaults.TRACER,
                   help="who traces each history's run: the Clang pass's runtime (default), or Valgrind's "
                        "pmemcheck, which sees every store, also those of code the pass never compiled "
                        "(precompiled libraries); needs pmemcheck on PATH or $CRASHCHECK_PMEMCHECK")
    p.add_argument("--stop-on", metavar="CLASS", choices=CLASSES + CONCURRENT_CLASSES,
                   help="end the run once a bug of this class is found (not an expected one)")
    p.add_argument("--json", dest="json_out", help="write the results file here")
    p.add_argument("--report", help="write the HTML report here")
    p.add_argument("--bugdir", help="where each bug record goes (default: RESULTS.bugs/ or crashcheck-bugs/)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=run)


def _check_args(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    if args.bug and len(args.structures) != 1:
        raise UsageError("--bug names a seeded bug of one structure; give exactly one STRUCTURE")
    if args.limit < 1 or args.max_ops < 1:
        raise UsageError("--limit and --max-ops must be positive")
    max_jobs = MAX_JOBS_PER_CPU * (os.cpu_count() or 1)
    if args.dask is not None and args.jobs != defaults.JOBS:
        raise UsageError("--jobs and --dask both say where the work runs; give one")
    if not 1 <= args.jobs <= max_jobs:
        raise UsageError(f"--jobs must be between 1 and {max_jobs} ({MAX_JOBS_PER_CPU} per core) on this machine")
    if args.examples is not None and args.examples < 1:
        raise UsageError("--examples must be positive")
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise UsageError(f"--budget must be a positive number of seconds, not {args.budget}")
    if args.recovery_crashes < 0:
        raise UsageError("--recovery-crashes must be 0 or more")
    if args.threads is None:
        args.threads = structures.get(args.structures[0]).bug(args.bug).threads if args.bug else 1
    if not 1 <= args.threads <= MAX_THREADS:
        raise UsageError(f"--threads must be between 1 and {MAX_THREADS}, not {args.threads}")
    if args.tracer == "pmemcheck":
        if args.threads > 1:
            raise UsageError("--tracer pmemcheck traces one thread (pmemcheck logs no thread of a store): "
                             "use --threads 1, or the pass's tracer for threaded histories")
        pmemcheck_command()          # not installed: one line saying how to get it, exit 2
    own = [name for name in args.structures if structures.get(name).own_pool]
    if own and args.strategy == "lazy":
        raise UsageError(f"{own[0]} maps its pool itself (libpmemobj), whose reads of the pool are not "
                         "instrumented, so the lazy strategy cannot tell its states apart; use --strategy "
                         "bounded (its default) or exhaustive")
    if args.strategy is None:
        args.strategy = "bounded" if own else defaults.STRATEGY
    targets = []
    if args.model is None:
        designed = {structures.get(name).designed_for for name in args.structures}
        if len(designed) > 1:
            raise UsageError("these structures are built for different persistency models "
                             f"({', '.join(sorted(designed))}); give --model, or fuzz them separately")
        args.model = designed.pop()
    for name in args.structures:
        s = structures.get(name)
        if args.model not in s.models:
            raise UsageError(f"{name} is not meant for the {args.model} model (models: {', '.join(s.models)})")
        if args.bug:
            s.bug(args.bug)
        s.driver(args.bug)
        if s.own_pool and args.tracer != "pmemcheck" and not s.pass_traces_pool:
            raise UsageError(f"{name} maps its pool itself (its adapter's create_file/open_file) other than "
                             "through libpmemobj's pmemobj_create/pmemobj_open or libpmem's pmem_map_file, "
                             "so the pass never sees the pool: fuzz it with --tracer pmemcheck")
        if args.threads > 1 and not s.thread_safe:
            raise UsageError(f"{name} is not thread-safe (its adapter does not set .threads), so it "
                             f"cannot be fuzzed with --threads {args.threads}")
        if not s.has_pm and args.threads == 1:
            raise UsageError(f"{name} keeps nothing in persistent memory, so there are no crash states to "
                             f"check (fuzz its {s.spec_model} model's linearizability with --threads 2 or more)")
        model = s.model()
        if model.histories is None:
            raise UsageError(f"{name} is judged against the {s.spec_model} model, which has no history "
                             "strategy to fuzz it with")
        targets.append((name, args.bug))
    return targets


def results_json(results: list[TargetResult], settings: Settings, command: str) -> dict:
    total = {"histories": 0, "partial_histories": 0, "crash_points": 0, "states_legal": 0,
             "states_explored": 0, "states_checked": 0, "points_sampled": 0, "points_complete": 0,
             "executions": 0, "hung_short": 0, "elapsed_s": 0.0}
    rows, bugs = [], []
    interrupted = next((r.interrupted for r in results if r.interrupted), None)
    for r in results:
        st = r.stats.as_json()
        for k in ("histories", "partial_histories", "crash_points", "states_explored", "states_checked",
                  "points_sampled", "points_complete", "executions", "hung_short"):
            total[k] += st[k]
        total["states_legal"] += r.stats.states_legal
        total["elapsed_s"] += st["elapsed_s"]
        try:
            designed = structures.get(r.structure).designed_for
        except UsageError:
            designed = None
        rows.append({"structure": r.structure, "bug": r.bug, "stats": st, "designed_for": designed,
                     "unexpected": sum(1 for b in r.records if not b["expected"]),
                     "expected": sum(1 for b in r.records if b["expected"]),
                     "first_unexpected_s": r.first_unexpected_s,
                     "complete": _complete(r), "unshrunk": r.unshrunk,
                     "warnings": list(r.warnings)})
        bugs.extend(r.records)
    if total["states_legal"] >= 2 ** 53:
        total["states_legal"] = str(total["states_legal"])
    total["elapsed_s"] = round(total["elapsed_s"], 2)
    total["states_per_s"] = round(total["states_explored"] / total["elapsed_s"], 1) if total["elapsed_s"] else 0.0
    return {"crashcheck": 1, "structures": [r.structure for r in results], "model": settings.model,
            "strategy": settings.strategy, "limit": settings.limit, "seed": settings.seed,
            "tracer": settings.tracer, "assumptions": settings.assumptions(), "command": command,
            "complete": bool(results) and all(_complete(r) for r in results),
            "interrupted": interrupted, "stats": total, "per_structure": rows, "bugs": bugs}


def _complete(r: TargetResult) -> bool:
    """R may be called complete: nothing stopped it, and it checked a history. Whoever ran it (in
    this process, --jobs, --dask), a target that checked no history is no pass: nothing is known
    about it (results_json; execute never exits 0 for it either)."""
    return not (r.interrupted or r.error) and r.stats.histories > 0


def _states_text(p: dict, elapsed: float) -> str:
    """The progress line's account of crash states: executions and covered points when lazy."""
    if p.get("executions") and p["executions"] != p["states"]:
        return (f"{p['executions']} executions ({p['executions'] / elapsed:.0f}/s) covering {big(p['states'])} "
                f"crash states, {p['complete']} of {p['points']} crash points complete")
    return f"{big(p['states'])} crash states checked ({p['states'] / elapsed:.0f}/s)"


def _why_none(res: dict, row: dict) -> str:
    """Why ROW (of results RES) checked no history, as far as the results tell."""
    stopped = res.get("interrupted")
    if stopped in signal.Signals.__members__:
        return f"{stopped} stopped the run before its first history was checked"
    if stopped:
        return f"the run ended early: {stopped}"
    if row.get("budget_s"):
        return "the budget ran out first: give a larger --budget"
    return "the run ended before its first history was checked"


def _summary(console: Console, res: dict) -> None:
    assumed = res.get("assumptions")
    if assumed:
        console.print(f"assumed: persistency model {assumed['model']}, failure-atomic unit "
                      f"{assumed['atomic_unit']} bytes (wider stores persist in pieces; --atomic-unit)",
                      highlight=False)
    for row in res["per_structure"]:
        st = row["stats"]
        name = row["structure"] + (f" --bug {row['bug']}" if row["bug"] else "")
        expected = f", {row['expected']} expected" if row["expected"] else ""
        partial = (f" ({st['partial_histories']} cut short by {res.get('interrupted') or 'the budget'})"
                   if st.get("partial_histories") else "")
        console.print(f"{name}: {st['histories']} histories{partial}, {st['crash_points']} crash points, "
                      f"{big(st['states_explored'])} states explored of {big(st['states_legal'])} legal "
                      f"({st['states_checked']} recovered), {st['elapsed_s']:.1f} s: "
                      f"{row['unexpected']} bug{'s' if row['unexpected'] != 1 else ''}{expected}",
                      highlight=False)
        if st.get("threads", 1) > 1:
            crash = ("crash states judged by durable linearizability, with the follow-up workload, the "
                     "leak check and crashes inside recovery" if st["crash_points"] else
                     "no crash states explored")
            console.print(f"  threads: {st['threads']} per history under the deterministic scheduler: "
                          f"linearizability, deadlock, livelock and invariants checked; {crash}",
                          highlight=False)
        if st.get("not_checked"):
            console.print(f"  not checked: {st['not_checked']} histories whose linearizability search ran "
                          "out of budget (neither pass nor failure)", highlight=False)
        if st["crash_points"]:
            sampled = st.get("points_sampled", 0)
            how = (f"lazy: {st.get('executions', 0)} executions" if res["strategy"] == "lazy"
                   else f"{res['strategy']}, limit {res['limit']}")
            if sampled:
                console.print(f"  coverage: {st['crash_points'] - sampled} of {st['crash_points']} crash points "
                              f"covered completely ({how}); {sampled} partial: no bug among the states "
                              "checked there, which is not all legal states", highlight=False)
            elif not st.get("partial_histories"):
                console.print(f"  coverage: every legal state of every crash point reached was covered "
                              f"({st['crash_points']} of {st['crash_points']} crash points complete, {how})",
                              highlight=False)
        if st.get("hung_short"):
            console.print(f"  hangs: {st['hung_short']} checks counted as hung after a shorter time limit: "
                          "checks of their history had hung the same way with the whole check timeout "
                          "(CRASHCHECK_HANG_AFTER=0 gives every state all of it)", highlight=False)
        if row.get("designed_for") and row["designed_for"] != res["model"]:
            console.print(f"  note: {row['structure']} is built for the {row['designed_for']} model and was "
                          f"checked under {res['model']}: findings may be by design", highlight=False)
        for warning in row.get("warnings") or []:
            console.print(f"  warning: {warning}", highlight=False, markup=False)
        if row.get("unshrunk"):
            console.print(f"  {row['unshrunk']} bug(s) reported as first seen: no time was left to "
                          "shrink their crash states", highlight=False)
        if st["histories"] == 0 and not row["unexpected"]:
            console.print(f"  warning: no history of {name} was checked ({_why_none(res, row)}); "
                          "nothing is known about it", highlight=False)
    for b in res["bugs"]:
        tag = "expected " if b["expected"] else ""
        where = f" (lost store at {b['sites'][0]})" if b["sites"] else ""
        console.print(f"  {tag}{b['class']}: {b['detail']}{where}", highlight=False, markup=False)
        console.print(f"      history: {'; '.join(b['history'])}", highlight=False, markup=False)
        if b.get("symptoms"):
            also = sorted({s["class"] for s in b["symptoms"]})
            console.print(f"      also:    {', '.join(also)} ({len(b['symptoms'])} other symptom"
                          f"{'s' if len(b['symptoms']) != 1 else ''} of this bug)", highlight=False, markup=False)
        console.print(f"      replay:  {b['replay']}", highlight=False, markup=False)


def plan_of(args: argparse.Namespace) -> list[tuple[str, str | None, Settings, Config]]:
    """The checked targets of fuzz arguments ARGS, each with how to fuzz it (harness/run/fuzz.py run_plan)."""
    targets = _check_args(args)
    settings = Settings(model=args.model, strategy=args.strategy, limit=args.limit, seed=args.seed,
                        recovery_crashes=args.recovery_crashes, atomic_unit=args.atomic_unit,
                        tracer=args.tracer)
    ModelOptions(atomic_unit=args.atomic_unit).validate()   # not a power of two: one error line, exit 2
    config = Config(examples=args.examples, budget=None if args.examples else (args.budget or defaults.BUDGET_S),
                    max_ops=args.max_ops, keys=args.keys, mix=args.mix, jobs=args.jobs,
                    start=PROCESS_START, threads=args.threads, sched=args.sched, stop_on_class=args.stop_on)
    return [(s, b, settings, config) for s, b in targets]


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    plan = plan_of(args)
    command = "crashcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["fuzz"] else ""
    return execute(args, plan, command, t0)


def execute(args: argparse.Namespace, plan: list, command: str, t0: float, shape=None) -> int:
    """Run PLAN on the executor ARGS ask for (--jobs/--dask), write the results, the bug records
    and the report (ARGS' --json, --report, --bugdir), print the summary; the exit status.
    SHAPE(results dict, TargetResults) may add to the results before they are written."""
    settings = plan[0][2]
    executors.check_dask(args.dask)
    json_out = Path(args.json_out) if args.json_out else None
    bugdir = Path(args.bugdir) if args.bugdir else (json_out.with_suffix(".bugs") if json_out else Path("crashcheck-bugs"))
    report = Path(args.report) if args.report else None
    # Every output is checked before the run starts: a run must not end in an unwritable path.
    check_outputs(json_out, report, bugdir)
    workdir.remove_stale()
    journal = Journal(journal_path(json_out, bugdir))
    kept = journal.keep_stale()
    if kept:
        print(f"crashcheck: note: a journal of an earlier run that was killed is kept at {kept}; "
              f"`crashcheck report {kept} -o REPORT.html` shows what it found", file=sys.stderr)
    journal.start({"command": command, "structures": [t[0] for t in plan], "model": settings.model,
                   "strategy": settings.strategy, "limit": settings.limit, "seed": settings.seed})
    console = Console(stderr=True)
    executor = None
    live_ok = not args.quiet and console.is_terminal

    if live_ok:
        live = Live(Text("starting..."), console=console, transient=True, refresh_per_second=4)
        live.start()

        def progress(p: dict) -> None:
            el = max(p["elapsed"], 1e-6)
            live.update(Text(f"{p['structure']}{' --bug ' + p['bug'] if p['bug'] else ''}: "
                             f"{p['histories']} histories, {_states_text(p, el)}, {p['bugs']} bugs so far, "
                             f"{el:.0f} s"))
    else:
        live = None
        last = [time.monotonic()]

        def progress(p: dict) -> None:
            if args.quiet or time.monotonic() - last[0] < 10:
                return
            last[0] = time.monotonic()
            el = max(p["elapsed"], 1e-6)
            print(f"crashcheck: {p['structure']}: {p['histories']} histories, {_states_text(p, el)}, "
                  f"{p['bugs']} bugs so far", file=sys.stderr)
    clear_pending_signal()
    old_term = signal.signal(signal.SIGTERM, interrupt)
    old_int_run = signal.signal(signal.SIGINT, interrupt)
    old_hook, sys.unraisablehook = sys.unraisablehook, quiet_interrupts(sys.unraisablehook)
    try:
        executor = executors.from_args(args.jobs, args.dask)
        results = run_plan(plan, progress, bugdir, journal, executor)
    except UsageError:
        journal.remove()      # a set-up fault: no bug records, nothing to keep
        raise
    finally:
        if executor is not None:
            with deferred_signals():       # (a second Ctrl-C while workers close loses nothing)
                executor.close()
        signal.signal(signal.SIGTERM, old_term)
        signal.signal(signal.SIGINT, old_int_run)
        sys.unraisablehook = old_hook
        if live is not None:
            live.stop()
    res = results_json(results, settings, command)
    for row, r in zip(res["per_structure"], results):
        cfg = plan[r.target][3]
        row["budget_s"] = None if cfg.examples else cfg.budget     # (the summary says what ran out)
    if shape is not None:
        shape(res, results)
    res["stats"]["elapsed_s"] = round(time.monotonic() - t0, 2)
    # A second Ctrl-C while the results are written must not lose them.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        write_run(res, bugdir, json_out, args.report)
        journal.remove()
    finally:
        signal.signal(signal.SIGINT, old_int)
    out = Console(soft_wrap=True)
    _summary(out, res)
    if json_out:
        out.print(f"results: {json_out}", highlight=False)
    if args.report:
        out.print(f"report:  {args.report}", highlight=False)
    error = next((r.error for r in results if r.error), None)
    if error and "\n" in error.strip():
        print(error, file=sys.stderr, end="")
        print("crashcheck: internal error (above); the bugs found before it are in the results",
              file=sys.stderr)
        return 2
    if error:         # (a unit that failed or was lost on its executor says it in one line)
        print(f"crashcheck: internal error: {error.strip()}; the bugs found before it are in the results",
              file=sys.stderr)
        return 2
    name = res["interrupted"]
    empty = [row["structure"] for row in res["per_structure"] if row["stats"]["histories"] == 0]
    if (empty or not results) and not name and not any(not b["expected"] for b in res["bugs"]):
        # Nothing was checked: that is no pass (a structure whose first history hangs for longer
        # than the budget would otherwise get exit 0).
        print(f"crashcheck: error: no history of {', '.join(empty) or 'any structure'} was checked"
              + (" within the budget (a history that runs longer than the budget cannot be told "
                 "from a hang); give a larger --budget" if res["per_structure"] and
                 res["per_structure"][0]["budget_s"] else ""), file=sys.stderr)
        return 2
    if name in signal.Signals.__members__:
        print(f"crashcheck: interrupted ({name}); partial results written", file=sys.stderr)
        return 128 + signal.Signals[name].value
    if name:
        print(f"crashcheck: warning: the run is incomplete ({name}); what was found is in the results",
              file=sys.stderr)
    return 1 if any(not b["expected"] for b in res["bugs"]) else 0
