"""`crashcheck run [options] -- PROGRAM ARGS...`: check a user's own PM program with its own
checker, no adapter (program mode, docs/program-mode.md).

Owns the command line of program mode: the program and its commands checked before anything
runs (one line and exit 2 for a program that does not exist, a command without `{image}`, a
strategy program mode cannot take), the outputs (results file, bug records, HTML report, as fuzz
writes them) and the summary. The work is harness/run/program_run.py's.
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

from crashcheck.crashsim.persistency import ALL_MODELS, ModelOptions
from crashcheck.harness.check.engines import ENGINES, EngineConfig
from crashcheck.harness.check.program_check import DEFAULT_TIMEOUT_S, Command
from crashcheck.harness.cli import options
from crashcheck.harness.cli.fuzz_summary import speed_text
from crashcheck.harness.cli.outputs import check_outputs
from crashcheck.harness.core import defaults
from crashcheck.harness.core.budget import PROCESS_START
from crashcheck.harness.core.counts import big
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.triage.pmdk_calls import library_calls
from crashcheck.harness.render.report import write_run
from crashcheck.harness.run.program_run import ProgramRun, execute
from crashcheck.harness.target.program import resolve

STRATEGIES = ("bounded", "exhaustive", "lazy")
MAX_TIMEOUT_S = 86400          # a day per command and image: past it (or inf) nothing could be judged


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="check your own PM program with its own checker (no adapter)",
                       description="Trace PROGRAM once, enumerate its crash points and the crash images "
                                   "the persistency model allows, and run --recover (optional) and "
                                   "--checker on each image: exit 0 means consistent, anything else is a "
                                   "finding. {image} in a command is the post-crash pool file ({image1}, "
                                   "{image2}, ... further files the program mapped).",
                       usage="crashcheck run [options] --checker 'CMD {image}' -- PROGRAM [ARGS...]")
    p.add_argument("--checker", required=True, metavar="'CMD {image}'",
                   help="judges one image: exit 0 consistent, anything else (status, signal, hang) a finding")
    p.add_argument("--recover", metavar="'CMD {image}'",
                   help="the program's own recovery or open path, run on the image before the checker")
    p.add_argument("--setup", metavar="'SHELL COMMAND'",
                   help="run first, untraced, in the folder the program runs in (e.g. 'truncate -s 4M pool'): "
                        "a pool it leaves is where the traced run and every crash image start")
    p.add_argument("--model", choices=ALL_MODELS, default=defaults.PERSISTENCY_MODEL,
                   help=f"persistency model (default {defaults.PERSISTENCY_MODEL}; pmreorder: a store reaches PM "
                        "only once flushed, as pmreorder replays it)")
    p.add_argument("--strategy", choices=STRATEGIES, default="bounded",
                   help="which crash states to check: bounded (default), exhaustive, or lazy (by what "
                        "commands built with crashcheck-cc read; bounded otherwise, saying why)")
    p.add_argument("-x", dest="engine_markers", action="append", metavar="MARKER=ENGINE",
                   help="pmreorder's per-section engines: MARKER=ENGINE[,MARKER=ENGINE...] or a JSON config "
                        "file of marker name -> engine; repeatable (docs/from-pmreorder.md#engines)")
    p.add_argument("-r", dest="default_engine", metavar="ENGINE",
                   help="pmreorder's default engine outside configured sections (with -x and no -r: "
                        f"NoReorderNoCheck, as pmreorder); one of {', '.join(ENGINES)}")
    p.add_argument("--stop-on-failure", action="store_true",
                   help="end at the first failing crash state (shrunk and recorded as usual): the run's "
                        "verdict, as a pmreorder TEST asks for it; the points after it are not checked")
    p.add_argument("--limit", type=options.positive, default=defaults.LIMIT,
                   help=f"bounded: states per crash point (default {defaults.LIMIT})")
    p.add_argument("--seed", type=options.seed, default=0,
                   help="run seed: {seed} in ARGS of run N is SEED+N; bounded's sampling; schedules' seeds")
    p.add_argument("--runs", type=options.positive, default=1, metavar="N",
                   help="run the program N times, {seed} in its arguments replaced by each run's seed")
    p.add_argument("--jobs", type=options.positive, default=1, metavar="N",
                   help="judge the crash points in N worker processes (the same findings as 1 for a seed)")
    p.add_argument("--schedules", type=int, default=0, metavar="N",
                   help="threaded programs: run each under N schedules of the deterministic scheduler")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S",
                   help=f"seconds each command may take on one image (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--budget", type=float, metavar="SECONDS",
                   help="bound the whole command to SECONDS: when they run out, the check in flight is killed, "
                        "the findings so far are reported (shrunk as far as time allowed) and the crash points "
                        "left unchecked counted (default: no limit)")
    p.add_argument("--tracer", choices=defaults.TRACERS, default=defaults.TRACER,
                   help="pass (a program built with crashcheck-cc, default) or pmemcheck (any binary)")
    p.add_argument("--atomic-unit", type=int, default=defaults.ATOMIC_UNIT, metavar="BYTES",
                   help=f"failure-atomic store unit (default {defaults.ATOMIC_UNIT})")
    p.add_argument("--json", dest="json_out", help="write the results file here")
    p.add_argument("--report", help="write the HTML report here")
    p.add_argument("--bugdir", help="where each bug record goes (default: RESULTS.bugs/ or crashcheck-bugs/)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    p.add_argument("program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS",
                   help="the program and its arguments, after --")
    p.set_defaults(func=run)


def _check(args: argparse.Namespace) -> ProgramRun:
    argv = list(args.program)
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        raise UsageError("run: no program given (crashcheck run [options] --checker 'CMD {image}' -- PROGRAM ARGS...)")
    if argv[0].startswith("-"):
        raise UsageError(f"run: unknown option {argv[0]!r} (the program and its arguments go after --)")
    if args.schedules < 0:
        raise UsageError(f"run: --schedules must be 0 or more, not {args.schedules}")
    if args.schedules and args.tracer == "pmemcheck":
        raise UsageError("run: --schedules needs the deterministic scheduler, which only programs built "
                         "with crashcheck-cc have (not --tracer pmemcheck)")
    if args.setup is not None and not args.setup.strip():
        raise UsageError("run: --setup is empty: give a shell command, e.g. --setup 'truncate -s 4M pool'")
    if not 0 < args.timeout <= MAX_TIMEOUT_S:
        raise UsageError(f"run: --timeout must be more than 0 and at most {MAX_TIMEOUT_S} seconds, not {args.timeout}")
    if args.budget is not None and not (math.isfinite(args.budget) and args.budget > 0):
        raise UsageError(f"run: --budget must be a positive number of seconds, not {args.budget}")
    ModelOptions(atomic_unit=args.atomic_unit).validate()
    engines = EngineConfig.from_options(args.engine_markers, args.default_engine)
    checker = Command.parse(args.checker, "--checker")
    recover = Command.parse(args.recover, "--recover") if args.recover is not None else None
    program = resolve(argv[0])
    if args.tracer == "pmemcheck":
        from crashcheck.harness.target.tracers import pmemcheck_command
        pmemcheck_command()
    settings = Settings(model=args.model, strategy=args.strategy, limit=args.limit, seed=args.seed,
                        atomic_unit=args.atomic_unit, tracer=args.tracer)
    return ProgramRun([program] + argv[1:], checker, recover, settings, runs=args.runs,
                      schedules=args.schedules, timeout_s=args.timeout, name=os.path.basename(program),
                      engines=engines, setup=args.setup, jobs=args.jobs, budget_s=args.budget,
                      stop_on_failure=args.stop_on_failure)


def _lazy_line(strategy: str, st: dict) -> str:
    """The summary's line on how lazy went ("" when not asked for): by the commands' reads, or
    bounded and why."""
    if strategy != "lazy" and not (st.get("lazy_points") or st.get("lazy_fallback")):
        return ""     # (lazy also serves ReorderFull sections under -x/-r)
    if st.get("lazy_fallback"):
        return f"lazy: not used, checked with bounded: {st['lazy_fallback']}\n"
    return (f"lazy: {st['lazy_points']} crash points searched by what the commands read "
            f"({st['lazy_executions']} states judged for their {big(st['lazy_states_legal'])} legal ones), "
            f"the others state by state\n")


def _budget_coverage(st: dict, bugs: list) -> str:
    """The coverage line of a run --budget ended: its crash points complete, partial (sampled, or
    the one the budget ended in) and unchecked (left by the budget)."""
    left, points = st["points_left_by_budget"], st["crash_points"]
    text = (f"the {st['budget_s']:g} s budget ran out: {points - st['points_sampled']} of {points + left} crash "
            f"points complete, {st['points_sampled']} partial, {left} unchecked")
    runs = st.get("runs_left_by_budget")
    if runs:
        text += f"; {runs} traced run{'s' if runs != 1 else ''} not run"
    return text + ("; no bug among the states checked" if not bugs else "")


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    job = _check(args)
    json_out = Path(args.json_out) if args.json_out else None
    bugdir = Path(args.bugdir) if args.bugdir else (json_out.with_suffix(".bugs") if json_out else Path("crashcheck-bugs"))
    check_outputs(json_out, Path(args.report) if args.report else None, bugdir)
    if not args.quiet:
        job.progress = lambda line: print(f"crashcheck: {line}", file=sys.stderr)
    command = "crashcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["run"] else ""
    # --budget counts from the process start, as fuzz's does (its start-up included); when main()
    # was called in a longer-lived process (a test), from this command's start
    job.budget_start = PROCESS_START if command else t0
    def stop(signum, frame):
        raise KeyboardInterrupt(signal.Signals(signum).name)
    old_term = signal.signal(signal.SIGTERM, stop)
    try:
        res = execute(job, bugdir, command)
    except KeyboardInterrupt as exc:
        # (the command running when it came was killed with its process group, supervise.py)
        name = str(exc) or "SIGINT"
        print(f"crashcheck: interrupted ({name}); nothing written", file=sys.stderr)
        return 128 + signal.Signals[name].value
    finally:
        signal.signal(signal.SIGTERM, old_term)
    res["stats"]["elapsed_s"] = round(time.monotonic() - t0, 2)
    write_run(res, bugdir, json_out, args.report)
    st = res["stats"]
    sampled = st["points_sampled"]
    cut = st.get("cut_by_budget")
    print(f"{job.name}: {st['histories']} traced run{'s' if st['histories'] != 1 else ''}, "
          f"{st['crash_points']} crash points, {big(st['states_explored'])} crash states checked of "
          f"{big(st['states_legal'])} legal ({st['executions']} images judged, the rest repeated an image), "
          f"{len(res['bugs'])} bug{'s' if len(res['bugs']) != 1 else ''}")
    if cut:
        print("coverage: " + _budget_coverage(st, res["bugs"]))
    elif st.get("stopped_at_failure"):
        runs = st["runs_left_by_stop"]
        print(f"coverage: stopped at the first failing crash state (--stop-on-failure): "
              f"{st['points_left_by_stop']} crash points after it not checked"
              + (f", {runs} traced run{'s' if runs != 1 else ''} not run" if runs else ""))
    else:
        print("coverage: " + (f"{sampled} of {st['crash_points']} crash points checked in part, as the engine of "
                            f"their section chose (-x/-r); no bug among the states checked"
                            if sampled and job.engines else
                            f"bounded: {sampled} of {st['crash_points']} crash points sampled "
                            f"(at most {job.settings.limit} states each); no bug among the states checked"
                            if sampled else "every legal crash state of every crash point was checked")
            if not res["bugs"] else "coverage: " + (f"{sampled} of {st['crash_points']} crash points sampled"
                                                    if sampled else "every legal crash state checked"))
    if st.get("engine_markers_unseen"):
        print(f"engines: the program emitted no marker of {', '.join(st['engine_markers_unseen'])} "
              f"(given to -x): their engines never applied")
    if st.get("crash_free_failed"):
        print(f"engines: the commands fail on the crash-free image ({st['crash_free_failed']}); "
              "images judged only where -x/-r check, as pmreorder judges them")
    if st.get("points_unchecked"):
        print(f"engines: {st['points_unchecked']} crash points inside NoReorderNoCheck sections not checked")
    if st.get("points_repeated"):
        print(f"engines: {st['points_repeated']} crash points at a marker not checked apart: the next point, "
              "before any store, has their states and more markers (pmreorder's view)")
    print(_lazy_line(job.settings.strategy, st) or "", end="")
    if st["crash_points"]:
        print(f"speed: {speed_text(st)}")
    if st.get("runs_timeout_shortened"):
        n = st["runs_timeout_shortened"]
        print(f"hangs: in {n} traced run{'s' if n != 1 else ''} the checks after the first "
              f"{defaults.from_env('hang_after')} that used the whole {job.timeout_s:g} s timeout got a shorter one "
              f"({st['hung_short']} hang{'s' if st['hung_short'] != 1 else ''} answered under it; "
              f"CRASHCHECK_HANG_AFTER=0 gives every state all of it)")
    for b in res["bugs"]:
        print(f"  {b['id']}: {b['detail']}")
        print(f"    {b['group']}; {b['occurrences']} failing state{'s' if b['occurrences'] != 1 else ''}; "
              f"{b['replay']}")
        inside = library_calls(b)
        if inside:
            print(f"    inside the library, called from: {inside}")
    if st.get("unshrunk"):
        n = st["unshrunk"]
        print(f"shrunk: {n} failing state{'s' if n != 1 else ''} not shrunk to the fewest lost stores, reported "
              f"as far as {'they' if n != 1 else 'it'} got: the budget ran out")
    if json_out:
        print(f"results: {json_out}")
    if args.report:
        print(f"report:  {args.report}")
    if cut and not st["crash_points"] and not res["bugs"]:
        # as fuzz: a run that checked nothing is no pass
        print(f"crashcheck: error: no crash point was checked within the {st['budget_s']:g} s budget; "
              f"give a larger --budget", file=sys.stderr)
        return 2
    return 1 if res["bugs"] else 0
