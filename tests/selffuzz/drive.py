"""Runs every subcommand on one generated target and hands each run to the oracle.

    for outcome in drive(target, work, dask=True): verdict, reason = judge(outcome)

Structures: `build` (once per family), `fuzz --bug v<seed>` plain and with one of the flag sets of
FUZZ_FLAGS (by seed, so every set meets every kind of target), a traced history of the driver
through `states`, `trace show` and `trace stats`, then `replay` of records and `report` of every
results file. Programs: the crashcheck-cc build, `run --strategy lazy` and `--strategy exhaustive`,
a traced run through `states` / `trace show` / `trace stats`, then `replay` and `report` the same.
Every command runs in its own process group and is killed at its deadline."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator

from .gen import ROOT, write_program, write_structure
from . import oracle
from .oracle import Outcome
from .params import Target

# the checkout's venv (the bench script may run under any python3), as tests/cli_run.py runs it
PYTHON = ROOT / ".venv" / "bin" / "python"
CLI = [str(PYTHON if PYTHON.exists() else sys.executable), "-m", "crashcheck.harness.cli.main"]
FIXED_DEADLINE_S = 90.0           # commands without a budget: states, trace, replay, report (loaded box)
BUILD_DEADLINE_S = 300.0           # a family's build (several drivers) on a loaded 2-core box
PROGRAM_RUN_LIMIT_S = 60.0         # crashcheck's own limit on a program's traced run (target/program.py)
TRACED_DEADLINE_S = 15.0           # the target's own traced run (a hang in it is the target's)
KEEP = 4096                        # bytes of each stream's head and tail kept for the report
REPLAYS_PER_RESULTS = 2
# the fuzz runs besides the plain one; a target gets FUZZ_FLAGS[seed % len] (--dask only when asked)
FUZZ_FLAGS = (["--perf"], ["--no-fix"], ["--jobs", "2"], ["--perf", "--no-fix", "--jobs", "2"], ["--dask", "local:1"])


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", "replace")
    return text if len(text) <= 2 * KEEP else text[:KEEP] + "\n[...]\n" + text[-KEEP:]


def run(seed: int, sub: str, argv: list[str], deadline: float, cwd: Path, env: dict | None = None,
        **fields) -> Outcome:
    """ARGV in CWD, killed with its process group at DEADLINE seconds; its output in files (a
    target's 4 MB floods must not sit in this process's pipes)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
        try:
            status = proc.wait(timeout=deadline)
        except subprocess.TimeoutExpired:
            status = None
        if status is None or status < 0:
            try:                       # what it left running (workers, a target's children)
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
        elapsed = time.monotonic() - t0
        size = out.tell() + err.tell()
        out.seek(0)
        err.seek(0)
        return Outcome(seed, sub, [str(a) for a in argv], status, elapsed, deadline, _clip(out.read()),
                       _clip(err.read()), size, **fields)


def _env(builds: Path) -> dict:
    return dict(os.environ, CRASHCHECK_BUILDS=str(builds), PYTHONUNBUFFERED="1")


def _records(results: Path, limit: int) -> list[tuple[Path, str]]:
    """Up to LIMIT records of RESULTS, one per class first (the bug records folder beside it)."""
    try:
        bugs = json.loads(results.read_text()).get("bugs", [])
    except (OSError, ValueError):
        return []
    folder = results.with_suffix(".bugs")
    seen, out = set(), []
    for b in sorted(bugs, key=lambda b: (b.get("class") in seen, b.get("expected", False))):
        path = folder / f"{b.get('id')}.json"
        if path.exists() and len(out) < limit:
            out.append((path, str(b.get("class", ""))))
            seen.add(b.get("class"))
    return out


def _after_runs(t: Target, work: Path, env: dict, results: list[Path]) -> Iterator[Outcome]:
    """replay of records and report of each results file the runs wrote."""
    replayed = 0
    for res in results:
        if not res.exists():
            continue
        yield run(t.seed, "report", [*CLI, "report", res, "-o", res.with_suffix(".html")], FIXED_DEADLINE_S,
                  ROOT, env, expect_ok=True)
        if replayed < REPLAYS_PER_RESULTS:
            for rec, cls in _records(res, REPLAYS_PER_RESULTS - replayed):
                replayed += 1
                yield run(t.seed, "replay", [*CLI, "replay", rec], FIXED_DEADLINE_S, work, env,
                          replay_class=cls,
                          nondeterministic=t.knobs.nondeterministic or t.knobs.threads > 0)


def _trace_reads(t: Target, trace: Path, traced_ok: bool, env: dict) -> Iterator[Outcome]:
    """The readers on the trace a traced run of T wrote: exit 0 when that run ended well (a
    trace cut by a target that died may be refused in one line)."""
    if not trace.exists():
        return
    yield run(t.seed, "states", [*CLI, "states", trace], FIXED_DEADLINE_S, ROOT, env, expect_ok=traced_ok)
    yield run(t.seed, "trace show", [*CLI, "trace", "show", trace], FIXED_DEADLINE_S, ROOT, env,
              expect_ok=traced_ok, flood_ok=True)
    yield run(t.seed, "trace stats", [*CLI, "trace", "stats", trace], FIXED_DEADLINE_S, ROOT, env,
              expect_ok=traced_ok)


def drive_structure(t: Target, work: Path, builds: Path, built: dict[str, Outcome], dask: bool,
                    quick: bool) -> Iterator[Outcome]:
    env = _env(builds)
    if t.name not in built:
        args = write_structure(t, work / "src" / t.name)
        built[t.name] = o = run(t.seed, "build", [*CLI, "build", t.name, *args, "--out", builds],
                                BUILD_DEADLINE_S, ROOT, env, expect_ok=True)
        yield o
    if built[t.name].status != 0:
        return                                  # counted once, as the build's failure
    mine = work / f"t{t.seed}"
    mine.mkdir(parents=True, exist_ok=True)
    flags = FUZZ_FLAGS[t.seed % (len(FUZZ_FLAGS) if dask else len(FUZZ_FLAGS) - 1)]
    results = []
    for i, extra in enumerate(([],) if quick else ([], flags)):
        res = mine / f"fuzz{i}.json"
        results.append(res)
        yield run(t.seed, " ".join(["fuzz", *extra]),
                  [*CLI, "fuzz", t.name, "--bug", t.bug_name, "--budget", str(t.budget), "--seed", str(t.seed),
                   "--max-ops", str(t.max_ops), "--quiet", "--json", res, *extra],
                  t.budget + oracle.GRACE_S + (15 if extra else 0), mine, env, results=res)
    history = mine / "history"
    history.write_text("".join(f"insert {k} {k * 3}\n" for k in range(1, t.max_ops + 1))
                       + "update 1 5\ndelete 2\nlookup 1\n")
    driver = builds / t.name / f"driver-bug-{t.bug_name}"      # the traced driver of this seed's variant
    trace = mine / "history.trace"
    traced = run(t.seed, "traced driver", [driver, "run", "--pool", mine / "pool", "--create", "--size", "8m", history],
                 TRACED_DEADLINE_S, mine, dict(env, CRASHCHECK_TRACE=str(trace)))
    yield from _trace_reads(t, trace, traced.status == 0, env)
    yield from _after_runs(t, mine, env, results)


def _run_budget(t: Target) -> float:
    """The time `crashcheck run` may take: its --budget (the target's, at least 15 s), or crashcheck's
    own limit on the traced run when the program itself may hang (the budget does not cut tracing:
    it must wait that out)."""
    if t.knobs.fault_phase == "program":
        return PROGRAM_RUN_LIMIT_S
    return max(t.budget, 15)


def drive_program(t: Target, work: Path, env: dict) -> Iterator[Outcome]:
    mine = work / f"t{t.seed}"
    cmd = write_program(t, mine)
    built = run(t.seed, "crashcheck-cc", cmd, BUILD_DEADLINE_S, mine, env, expect_ok=True)
    yield built
    if built.status != 0:
        return
    prog = mine / "prog"
    recover = t.knobs.fault_phase == "recover" or t.seed % 2 == 0
    results = []
    for strategy in ("lazy", "exhaustive"):
        res = mine / f"run-{strategy}.json"
        results.append(res)
        argv = [*CLI, "run", "--strategy", strategy, "--timeout", "5", "--seed", str(t.seed), "--quiet",
                "--json", res, "--checker", f"{prog} check {{image}}", "--budget", str(max(t.budget, 15))]
        if recover:
            argv += ["--recover", f"{prog} recover {{image}}"]
        yield run(t.seed, f"run {strategy}", [*argv, "--", prog, "run", "pool", str(t.max_ops)],
                  _run_budget(t) + oracle.GRACE_S, mine, env, results=res)
    trace = mine / "prog.trace"
    (mine / "traced").mkdir(exist_ok=True)
    traced = run(t.seed, "traced program", [prog, "run", "pool", str(t.max_ops)], TRACED_DEADLINE_S,
                 mine / "traced", dict(env, CRASHCHECK_TRACE=str(trace)))
    yield from _trace_reads(t, trace, traced.status == 0, env)
    yield from _after_runs(t, mine, env, results)


def drive(t: Target, work: Path, builds: Path, built: dict[str, Outcome], dask: bool = False,
          quick: bool = False) -> Iterator[Outcome]:
    """Every command on T (work files under WORK, structure builds under BUILDS, BUILT remembering
    which families were built and how that went); QUICK: a structure gets the plain fuzz only."""
    if t.kind == "structure":
        yield from drive_structure(t, work, builds, built, dask, quick)
    else:
        yield from drive_program(t, work, _env(builds))
