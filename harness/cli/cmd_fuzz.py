"""`crashcheck fuzz STRUCTURE...`: generate histories, crash them everywhere, report the bugs.

Owns the command line of a fuzz run, and writing the results file (harness/run/results.py
Results.as_json), the per-bug records and the HTML report (all atomically), and the journal that
keeps every bug the moment it is found (harness/run/journal.py); `execute` does all of that for any
plan of targets on the executor --jobs/--dask chose (harness/run/executor_choice.py), for `crashcheck
campaign` too, with the progress display (harness/cli/fuzz_progress.py) and the console summary
(harness/cli/fuzz_summary.py). Exit status: 0 when nothing unexpected was found, 1 when bugs were
found, 2 on a usage or set-up error (or an internal error, after writing what was found), 128 +
the signal (130 for SIGINT, 143 for SIGTERM) when the run was interrupted, after writing the
partial results.
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

from crashcheck.crashsim.persistency import MODELS, ModelOptions
from crashcheck.crashsim.states import STRATEGIES
from crashcheck.harness.core import defaults
from crashcheck.harness.run import executor_choice
from crashcheck.harness.target import structures
from crashcheck.harness.core import workdir
from crashcheck.harness.core.budget import PROCESS_START, clear_pending_signal, deferred_signals, interrupt, quiet_interrupts
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.journal import Journal, journal_path
from crashcheck.harness.run.plan import Plan, run_plan
from crashcheck.harness.cli.fuzz_progress import ProgressDisplay
from crashcheck.harness.cli.fuzz_summary import print_summary
from crashcheck.harness.cli.outputs import check_outputs
from crashcheck.harness.check.threads import SCHED_KINDS
from crashcheck.harness.target.tracers import TRACERS, pmemcheck_command
from crashcheck.harness.render.report import write_run
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run.strategies import KEY_DISTRIBUTIONS, MIXES
from crashcheck.specs.oracle import CLASSES, CONCURRENT_CLASSES

# More worker processes than this many per core only adds contention (and forks per state).
MAX_JOBS_PER_CPU = 4
MAX_THREADS = 4                 # threads per history (--threads)


def _continuation(text: str) -> int | str:
    """--continuation's value: a number of keys, or "off" (checked in _check, which says what is
    wrong in one line)."""
    try:
        return int(text)
    except ValueError:
        return text


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("fuzz", help="fuzz structures with crash states and report bugs")
    p.add_argument("structures", nargs="+", metavar="STRUCTURE", help="one or more (see `crashcheck list`)")
    p.add_argument("--bug", help="fuzz this seeded-bug variant (one structure only)")
    add_options(p)
    p.set_defaults(func=run)


def add_options(p: argparse.ArgumentParser, drawn: bool = True) -> None:
    """The options of a checking run, on P; DRAWN: also those of drawing histories (`fuzz`; not
    `check --history`, whose one history is given)."""
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
    if drawn:
        g = p.add_mutually_exclusive_group()
        g.add_argument("--budget", type=float, help=f"seconds per structure (default {defaults.BUDGET_S:g})")
        g.add_argument("--examples", type=int, help="histories per structure (deterministic)")
        p.add_argument("--jobs", type=int, default=defaults.JOBS, help=f"parallel worker processes (default {defaults.JOBS})")
        p.add_argument("--dask", metavar="ADDRESS",
                       help="run on Dask distributed instead: tcp://HOST:8786 (a running scheduler) or local:N "
                            "(a LocalCluster of N worker processes here); needs crashcheck[dask]")
        p.add_argument("--max-ops", type=int, default=None,
                       help=f"longest history (default {defaults.MAX_OPS}; threaded runs grow it while their threads "
                            "meet on nothing new)")
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
    p.add_argument("--continuation", type=_continuation, default=defaults.CONTINUATION, metavar="N|off",
                   help=f"after each recovery, run the continuation aimed at the crash (every key looked up, "
                        f"a scan, the rest of the history, the crashed key inserted, deleted and updated) "
                        f"and insert N keys next to the crashed key (default {defaults.CONTINUATION}); off: "
                        f"the short fixed follow-up of before instead")
    p.add_argument("--atomic-unit", type=int, default=defaults.ATOMIC_UNIT, metavar="BYTES",
                   help=f"failure-atomic unit: wider stores are split into pieces of this size that may "
                        f"persist apart (a power of two up to the line size; default {defaults.ATOMIC_UNIT})")
    p.add_argument("--tracer", choices=TRACERS, default=defaults.TRACER,
                   help="who traces each history's run: the Clang pass's runtime (default), or Valgrind's "
                        "pmemcheck, which sees every store, also those of code the pass never compiled "
                        "(precompiled libraries); needs pmemcheck on PATH or $CRASHCHECK_PMEMCHECK")
    if drawn:
        p.add_argument("--shrink", type=int, default=defaults.SHRINK, metavar="N",
                       help=f"histories tried while shrinking the failures of one batch of histories "
                            f"(default {defaults.SHRINK}; 0: report a bug's history as first found, and shrink "
                            f"only its crash state)")
        p.add_argument("--stop-on", metavar="CLASS", choices=CLASSES + CONCURRENT_CLASSES,
                       help="end the run once a bug of this class is found (not an expected one)")
    p.add_argument("--no-fix", dest="fixes", action="store_false",
                   help="do not search a fix for ordering bugs (the search proves each candidate by checking "
                        "the history again: seconds per bug)")
    p.add_argument("--perf", action="store_true",
                   help="also count the flushes and fences that did nothing (a clean line, a line flushed "
                        "already, a fence with nothing to order), per source site and per operation, over "
                        "every history: a section of the summary and the report, never a bug")
    p.add_argument("--json", dest="json_out", help="write the results file here")
    p.add_argument("--report", help="write the HTML report here")
    p.add_argument("--bugdir", help="where each bug record goes (default: RESULTS.bugs/ or crashcheck-bugs/)")
    p.add_argument("--quiet", action="store_true", help="no progress display")


def _check_args(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    if args.bug and len(args.structures) != 1:
        raise UsageError("--bug names a seeded bug of one structure; give exactly one STRUCTURE")
    if args.limit < 1 or (args.max_ops is not None and args.max_ops < 1):
        raise UsageError("--limit and --max-ops must be positive")
    if args.shrink < 0:
        raise UsageError(f"--shrink must be 0 or more histories, not {args.shrink}")
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
    if args.continuation == "off":
        args.continuation = None
    elif args.continuation is not None and not (isinstance(args.continuation, int)
                                                and 0 <= args.continuation <= defaults.MAX_CONTINUATION):
        raise UsageError(f"--continuation must be between 0 and {defaults.MAX_CONTINUATION} or off, "
                         f"not {args.continuation}")
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


def plan_of(args: argparse.Namespace) -> Plan:
    """The checked targets of fuzz arguments ARGS, each with how to fuzz it (harness/run/plan.py run_plan)."""
    targets = _check_args(args)
    settings = Settings(model=args.model, strategy=args.strategy, limit=args.limit, seed=args.seed,
                        recovery_crashes=args.recovery_crashes, atomic_unit=args.atomic_unit,
                        tracer=args.tracer, continuation=args.continuation, perf=getattr(args, "perf", False),
                        fixes=getattr(args, "fixes", True))
    ModelOptions(atomic_unit=args.atomic_unit).validate()   # not a power of two: one error line, exit 2
    config = Config(examples=args.examples, budget=None if args.examples else (args.budget or defaults.BUDGET_S),
                    max_ops=args.max_ops or defaults.MAX_OPS, adaptive_ops=args.max_ops is None,
                    keys=args.keys, mix=args.mix, jobs=args.jobs,
                    start=PROCESS_START, threads=args.threads, sched=args.sched, stop_on_class=args.stop_on,
                    shrink_calls=args.shrink)
    return [(s, b, settings, config) for s, b in targets]


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    plan = plan_of(args)
    command = "crashcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["fuzz"] else ""
    return execute(args, plan, command, t0)


def execute(args: argparse.Namespace, plan: Plan, command: str, t0: float, shape=None) -> int:
    """Run PLAN on the executor ARGS ask for (--jobs/--dask), write the results, the bug records
    and the report (ARGS' --json, --report, --bugdir), print the summary; the exit status.
    SHAPE(results dict, TargetResults) may add to the results before they are written."""
    settings = plan[0][2]
    executor_choice.check_dask(args.dask)
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
    executor = None
    progress = ProgressDisplay(Console(stderr=True), args.quiet)
    clear_pending_signal()
    old_term = signal.signal(signal.SIGTERM, interrupt)
    old_int_run = signal.signal(signal.SIGINT, interrupt)
    old_hook, sys.unraisablehook = sys.unraisablehook, quiet_interrupts(sys.unraisablehook)
    try:
        executor = executor_choice.from_args(args.jobs, args.dask)
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
        progress.stop()
    res = results.as_json(command)
    for row, r in zip(res["per_structure"], results.targets):
        cfg = plan[r.target][3]
        row["budget_s"] = None if cfg.examples else cfg.budget     # (the summary says what ran out)
    if shape is not None:
        shape(res, results.targets)
    res["stats"]["elapsed_s"] = round(time.monotonic() - t0, 2)
    # A second Ctrl-C while the results are written must not lose them.
    old_int = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        write_run(res, bugdir, json_out, args.report)
        journal.remove()
    finally:
        signal.signal(signal.SIGINT, old_int)
    out = Console(soft_wrap=True)
    print_summary(out, res)
    if json_out:
        out.print(f"results: {json_out}", highlight=False)
    if args.report:
        out.print(f"report:  {args.report}", highlight=False)
    error = results.error
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
    if (empty or not results.targets) and not name and not any(not b["expected"] for b in res["bugs"]):
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
