"""A program-mode run (`crashcheck run`): the program traced once per run and schedule, every
trace's crash states judged by the program's own commands, the findings of all of them merged
into one results file's worth of bugs.

Owns the loop over runs (`--runs N`: `{seed}` in the arguments is the run's seed, seed + run
number) and schedules (`--schedules N`: each run also under N seeds of the deterministic
scheduler, random:SEED), each traced after the `--setup` command, its crash points judged by
`--jobs` forked workers when asked, under pmreorder's engines (`-x`/`-r`) when given, the check that the commands pass on each run's crash-free image, the
counts, and the results (docs/bug-record.md, with a `program` object), plus replaying one record.
Never parses a command line and never renders (harness/cli/cmd_run.py writes the files).
"""
from __future__ import annotations

import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from crashcheck.crashsim.layout import trace_layout
from crashcheck.harness.check.engines import EngineConfig, Sections, marker_name, store_events
from crashcheck.harness.check.exhaustive import refuse_exhaustive
from crashcheck.harness.check.program_check import (Command, ImageChecker, check_crash_free,
                                                       crash_free_failure)
from crashcheck.harness.check.program_explore import ExploreStats, Prejudged, explore, image_at, merge, prejudge
from crashcheck.harness.core.budget import PROCESS_START, Budget, OutOfTime
from crashcheck.harness.core.counts import big, for_json, json_int
from crashcheck.harness.check import trace_digest
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.core.workdir import make_workdir
from crashcheck.harness.run.results import rates
from crashcheck.harness.target.program import trace_program, with_seed
from crashcheck.harness.triage import program_records


PROGRESS_EVERY_S = 10.0          # a progress line this often at most while crash points are checked


@dataclass
class ProgramRun:
    """What `crashcheck run` was asked to do."""
    argv: list[str]                    # program (resolved) and its arguments, {seed} not replaced
    checker: Command
    recover: Command | None
    settings: Settings
    runs: int = 1
    schedules: int = 0                 # 0: no scheduler
    timeout_s: float = 10.0
    name: str = ""
    jobs: int = 1                      # --jobs: worker processes judging the crash points
    setup: str | None = None           # --setup: a shell command run before each traced run, untraced
    engines: EngineConfig | None = None   # pmreorder's -x/-r: each section's states (None: --strategy)
    budget_s: float | None = None      # --budget: seconds for the whole command (None: no limit)
    budget_start: float | None = None  # time.monotonic() the budget counts from (None: the process start)
    stop_on_failure: bool = False      # --stop-on-failure: the first failing state ends the run
    progress: Callable[[str], None] | None = None
    stats: ExploreStats = field(default_factory=ExploreStats)


def _sched(run: ProgramRun, k: int) -> str | None:
    return None if run.schedules == 0 else f"random:{run.settings.seed + k}"


def _progress(run: ProgramRun, what: str) -> Callable[[ExploreStats, int], None] | None:
    """A line every PROGRESS_EVERY_S seconds while a traced run's crash points are checked (a long
    run must not look stuck), or None under --quiet."""
    if run.progress is None:
        return None
    last = [time.monotonic()]

    def on_point(stats: ExploreStats, findings: int) -> None:
        if time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            last[0] = time.monotonic()
            run.progress(f"{what}: {stats.crash_points} crash points so far, {big(stats.states_explored)} states, "
                         f"{stats.executions} images judged, {findings} finding{'s' if findings != 1 else ''}")
    return on_point


def _fails_at_start(trace, checker: ImageChecker, sections: Sections) -> str:
    """crash_free_failure on the image the run started from, the markers as at its start."""
    env, checker.env = checker.env, sections.env(0)
    try:
        return crash_free_failure(trace, checker, stores=False)
    finally:
        checker.env = env


def execute(run: ProgramRun, bugdir: Path, command: str) -> dict:
    """Trace, explore and judge every run and schedule; the results (docs/bug-record.md)."""
    t0 = time.monotonic()
    s = run.settings
    # --budget: its soft deadline ends the judging of states, its hard one shrinking
    # (harness/core/budget.py, program_explore._walk)
    budget = (Budget(run.budget_s, start=PROCESS_START if run.budget_start is None else run.budget_start)
              if run.budget_s is not None else None)
    runs_left = 0                     # traced runs (run x schedule) the budget left no time for
    runs_left_by_stop = 0             # traced runs after the first failing state (--stop-on-failure)
    found: list[dict] = []
    traced_runs = 0
    hung_short = shortened = 0        # hangs answered under the shorter limit; runs that shortened it
    fallbacks: list[str] = []         # why lazy could not be used (a run checked bounded instead)
    seen: set[str] = set()            # the section names the runs' markers opened (for -x's names)
    crash_free_failed = ""            # -x/-r: why the commands failed on a crash-free image
    with make_workdir(0) as tmp:
        root = Path(tmp)
        for r in range(run.runs):
            seed = s.seed + r
            argv = with_seed(run.argv, seed)
            for k in range(max(1, run.schedules)):
                sched = _sched(run, k)
                if run.stop_on_failure and found:
                    runs_left_by_stop += 1
                    continue
                if budget is not None and budget.search_over():
                    runs_left += 1
                    continue
                traced = trace_program(argv, root / "run", tracer=s.tracer, sched=sched, setup=run.setup)
                traced_runs += 1
                if s.strategy == "exhaustive":
                    # before any state is checked (harness/check/exhaustive.py); a caller that
                    # would rather fall back to lazy (pmreorder's ReorderFull) catches it here
                    refuse_exhaustive(traced.trace, s.options(), f"the traced run of {run.name}"
                                      + (f" (run {r + 1}{', schedule ' + sched if sched else ''})"
                                         if run.runs > 1 or sched else ""))
                checker = ImageChecker(traced.trace, trace_layout(traced.trace), run.checker, run.recover,
                                       root / "check", run.timeout_s)
                checker.on_shorten = run.progress
                strategy = s.strategy
                sections = Sections(traced.markers, run.engines, store_events(traced.trace))
                seen.update(marker_name(text) for _, text in traced.markers)
                checker.log_reads = strategy == "lazy" or (run.engines is not None and run.engines.uses("lazy"))
                checker.env = sections.env(len(traced.trace.events))
                if budget is not None:
                    checker.deadline = budget.soft
                try:
                    failed = crash_free_failure(traced.trace, checker)
                    # under pmreorder's engines images are judged only where they say, as pmreorder
                    # judges them: a run whose end state fails (PMDK's obj_ulog_advanced/TEST9, its
                    # error injected) is judged state by state, the failure reported, as long as
                    # the commands can pass at all: on the image the run started from
                    if failed and (run.engines is None or _fails_at_start(traced.trace, checker, sections)):
                        check_crash_free(traced.trace, checker, failed)
                    crash_free_failed = crash_free_failed or failed
                except OutOfTime:
                    pass       # (the walk below then leaves every point of this run: counted)
                checker.deadline = None
                why = lazy_unavailable(checker)
                if why:
                    strategy, checker.log_reads = "bounded", False
                    if why not in fallbacks:
                        fallbacks.append(why)
                        if run.progress:
                            run.progress(f"lazy: {why}: checking with bounded instead")
                what = f"run {r + 1}/{run.runs}" + (f", schedule {sched}" if sched else "")
                kw = dict(options=s.options(), strategy=strategy, limit=s.limit, seed=s.seed, sections=sections,
                          budget=budget, stop_on_failure=run.stop_on_failure)
                prejudged = None
                if run.jobs > 1 and not (budget is not None and budget.search_over()):
                    def make_checker(k: int, traced=traced, log_reads=checker.log_reads) -> ImageChecker:
                        c = ImageChecker(traced.trace, trace_layout(traced.trace), run.checker, run.recover,
                                         root / f"check-{k}", run.timeout_s)
                        c.log_reads = log_reads
                        return c
                    prejudged = in_workers(traced.trace, make_checker, run.jobs, kw)
                findings, stats = explore(traced.trace, checker, prejudged=prejudged,
                                          on_point=_progress(run, what), **kw)
                for name in ("crash_points", "states_legal", "states_explored", "points_sampled", "executions",
                             "lazy_points", "lazy_executions", "lazy_legal", "points_unchecked", "points_repeated",
                             "points_left_by_budget", "points_cut_by_budget", "unshrunk", "points_left_by_stop"):
                    setattr(run.stats, name, getattr(run.stats, name) + getattr(stats, name))
                hung_short += checker.hung_short
                shortened += checker.short_s is not None
                program = {"checker": run.checker.text, "recover": run.recover.text if run.recover else None,
                           "setup": run.setup,
                           "timeout_s": run.timeout_s, "run": r, "run_seed": seed, "sched": sched}
                for n, f in enumerate(findings):
                    found.append(program_records.build(f, traced, name=run.name, settings=s, program=program,
                                                       ident=f"{run.name}-{r}-{k}-{n}", bugdir=bugdir))
                if run.progress:
                    run.progress(f"{what}: {stats.crash_points} crash points, {big(stats.states_explored)} states, "
                                 f"{len(findings)} finding{'s' if len(findings) != 1 else ''}")
    bugs = program_records.merge(found, bugdir)
    st = run.stats
    cut = bool(st.points_left_by_budget or st.points_cut_by_budget or runs_left or st.unshrunk)
    elapsed = time.monotonic() - t0
    stats_json = {"histories": traced_runs, "partial_histories": 0, "crash_points": st.crash_points,
                  "states_legal": for_json(st.states_legal),
                  "states_explored": json_int(st.states_explored), "states_checked": json_int(st.states_explored),
                  "points_sampled": st.points_sampled, "points_complete": st.crash_points - st.points_sampled,
                  "executions": st.executions, "hung_short": hung_short,
                  "runs_timeout_shortened": shortened, "points_unchecked": st.points_unchecked,
                  "points_repeated": st.points_repeated,
                  # --budget: whether it ended the run, the crash points it left unchecked (never
                  # in crash_points), those it ended part way (among points_sampled), traced runs
                  # it left, failing states it left (partly) unshrunk
                  "budget_s": run.budget_s, "cut_by_budget": cut,
                  "points_left_by_budget": st.points_left_by_budget,
                  "points_cut_by_budget": st.points_cut_by_budget, "runs_left_by_budget": runs_left,
                  "unshrunk": st.unshrunk,
                  # --stop-on-failure: whether a failing state ended the run, the crash points after it
                  # that would have been checked and the traced runs after it (neither judged)
                  "stopped_at_failure": run.stop_on_failure and bool(bugs),
                  "points_left_by_stop": st.points_left_by_stop, "runs_left_by_stop": runs_left_by_stop,
                  # -x names no run's markers opened: their engines never applied (a typo, or no markers)
                  "engine_markers_unseen": sorted(set(run.engines.markers) - seen) if run.engines else [],
                  # -x/-r: the commands failed on a crash-free image (without engines: exit 2)
                  "crash_free_failed": crash_free_failed or None,
                  "lazy_points": st.lazy_points,
                  "lazy_executions": st.lazy_executions, "lazy_states_legal": json_int(st.lazy_legal), "lazy_fallback": "; ".join(fallbacks) or None,
                  "elapsed_s": round(elapsed, 2), **rates(st.executions, st.states_explored, elapsed)}
    # as fuzz's: a run that checked nothing (the budget ran out first) is no pass
    complete = st.crash_points > 0 or not cut
    # lazy asked for but no run could follow the commands' reads: the results say what was done
    strategy = "bounded" if s.strategy == "lazy" and fallbacks and not st.lazy_points else s.strategy
    return {"crashcheck": 1, "structures": [run.name], "model": s.model, "strategy": strategy,
            "limit": s.limit, "seed": s.seed, "tracer": s.tracer, "assumptions": s.assumptions(),
            "command": command, "complete": complete, "interrupted": None, "stats": stats_json,
            "per_structure": [{"structure": run.name, "bug": None, "stats": stats_json, "budget_s": run.budget_s,
                               "unexpected": len(bugs), "expected": 0, "complete": complete, "warnings": []}],
            "program": {"argv": list(run.argv), "checker": run.checker.text, "setup": run.setup,
                        "recover": run.recover.text if run.recover else None, "runs": run.runs,
                        "schedules": run.schedules, "timeout_s": run.timeout_s, "jobs": run.jobs,
                        "engines": ({"markers": dict(run.engines.markers), "default": run.engines.default}
                                    if run.engines else None)},
            "bugs": bugs}


# what a forked worker of in_workers() judges (set in the parent just before the fork)
_JOB: tuple | None = None


def _quiet_term(signum, frame):
    raise SystemExit(128 + signum)


def _worker_start() -> None:
    """A worker ends quietly on SIGTERM (the pool's end sends it to every worker, idle or cut by
    --budget; a SystemExit still kills the command it was running, supervise.py), where the
    parent's handler (a KeyboardInterrupt) made each print a traceback."""
    signal.signal(signal.SIGTERM, _quiet_term)


def _share(k: int) -> Prejudged:
    trace, make_checker, n, kw = _JOB
    return prejudge(trace, make_checker(k), (k, n), **kw)


def in_workers(trace, make_checker: Callable[[int], ImageChecker], n: int, kw: dict) -> Prejudged:
    """--jobs N: N forked workers each pick and judge the states of one N-th of the crash points, each
    with its own image files (MAKE_CHECKER(k)); their picks and verdicts, merged. The parent's
    walk then finds, shrinks and counts exactly as one process would (program_explore._walk)."""
    import multiprocessing      # here: a run without --jobs never needs it (start-up)
    global _JOB
    _JOB = (trace, make_checker, n, kw)
    try:
        with multiprocessing.get_context("fork").Pool(n, initializer=_worker_start) as pool:
            return merge(pool.map(_share, range(n)))
    finally:
        _JOB = None


def lazy_unavailable(checker: ImageChecker) -> str:
    """Why lazy cannot follow the commands' reads, from their logs of the crash-free check ("":
    it can, or lazy was not asked for)."""
    if not checker.log_reads or checker.last_reads is None:
        return ""
    return next((r.why for r in checker.last_reads if not r.ok), "")


def replay(rec: dict, out=None) -> int:
    """Run a program record again: trace its program as recorded (the same arguments, the very
    schedule), rebuild its crash state and judge it. 1: it reproduces (the same class or another
    failure), 0: the state now passes on the recorded run, trace_digest.EXIT_NONDETERMINISTIC:
    the program ran differently (harness/check/trace_digest.py), UsageError: the record no
    longer fits the trace."""
    out = out or sys.stdout
    prog = rec["program"]
    settings = Settings(model=rec["model"], strategy=rec["strategy"], limit=rec["limit"], seed=rec["seed"],
                        atomic_unit=(rec["assumptions"] or {}).get("atomic_unit", 8), tracer=rec["tracer"])
    checker_cmd = Command.parse(prog["checker"], "the record's checker")
    recover_cmd = Command.parse(prog["recover"], "the record's recover command") if prog["recover"] else None
    from crashcheck.harness.target.program import resolve
    argv = [resolve(prog["argv"][0])] + list(prog["argv"][1:])
    crash = rec["crash"]
    print(f"replaying {rec['id']}: {rec['class']} in {' '.join(prog['argv'])}, model {rec['model']}", file=out)
    with make_workdir(0) as tmp:
        root = Path(tmp)
        traced = trace_program(argv, root / "run", tracer=settings.tracer, sched=prog["sched"],
                               replay_schedule=rec["schedule"], setup=prog.get("setup"))

        def again():
            return trace_program(argv, root / "again", tracer=settings.tracer, sched=prog["sched"],
                                 replay_schedule=rec["schedule"], setup=prog.get("setup")).trace
        parted = trace_digest.replay_parting(rec["trace_digest"], traced.trace, again, argv[0])
        if parted is not None and parted.parting.what == "path" and not parted.changed:
            # the same program took another path: the record's crash point and state are not this run's
            print(f"not reproducible: nondeterministic: {parted.text}", file=out)
            print("  the program does not do the same when run again with the same arguments (the clock, "
                  "rand() seeded from it, its process id, input files...), so no replay can say whether "
                  "the bug is fixed", file=out)
            return trace_digest.EXIT_NONDETERMINISTIC
        checker = ImageChecker(traced.trace, trace_layout(traced.trace), checker_cmd, recover_cmd,
                               root / "check", prog["timeout_s"])
        got = image_at(traced.trace, settings.options(), crash["index"], tuple(crash["choice"]), checker,
                       Sections(traced.markers, None))
        if got is None:
            raise UsageError(f"{rec['id']}: the program's trace no longer has crash point {crash['index']} with "
                             f"that crash state (the program or its build changed, or the record is corrupt)")
        cp, v = got
        kind = traced.trace.events[cp.event].kind if cp.event < len(traced.trace.events) else "end"
        if crash["event"] is not None and (cp.event, kind) != (crash["event"], crash["kind"]):
            raise UsageError(f"{rec['id']}: the crash does not replay as recorded: crash point {cp.index} is now "
                             f"the {kind} at event {cp.event}, the record's was the {crash['kind']} at event "
                             f"{crash['event']} (the program or its build changed)")
    print(f"crash: before event #{cp.event} ({kind}), during {prog['operation'] or 'the run'}", file=out)
    for p in cp.lost(tuple(crash["choice"])):
        site = traced.trace.site(traced.trace.events[p.seq].site)
        print(f"  lost   #{p.seq} {'r' + str(p.region) if p.region else ''}+{p.off:#x} {len(p.data)} bytes "
              f"{p.data.hex()}  {site.describe() if site else '?'}", file=out)
    if v.ok:
        lines, status = trace_digest.not_reproduced("not reproduced: the commands now pass on this crash state",
                                                    rec["trace_digest"], parted)
        print("\n".join(lines), file=out)
        return status
    if v.output.strip():
        print("output:", file=out)
        for line in v.output.strip().splitlines()[-10:]:
            print(f"  {line}", file=out)
    same = v.cls == rec["class"]
    print(f"{'reproduced' if same else 'a different bug now'}: {v.cls}: {v.how}", file=out)
    return 1


__all__ = ["ProgramRun", "execute", "in_workers", "lazy_unavailable", "replay"]
