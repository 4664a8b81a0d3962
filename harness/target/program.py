"""A user's own PM program as the target of `crashcheck run` (no adapter): finding it, running it
once traced, and naming its operations.

Owns the program's side of program mode: the program must exist and be executable; `{seed}` in
its arguments is replaced by the run's seed; it runs in a fresh folder of its own, after the
`--setup` shell command (untraced) ran there (so a pool file
it creates by a relative name never meets an earlier run's), supervised, traced by the pass
(CRASHCHECK_TRACE, a binary built with crashcheck-cc) or by pmemcheck (any binary); a threaded
program runs under the deterministic scheduler when a schedule seed is given. Its operations are
the `crashcheck_op_begin/end` pairs it logged, or the pmreorder marker strings it emitted
(`NAME.BEGIN` / `NAME.END`, through VALGRIND_PMC_EMIT_LOG under pmemcheck or crashcheck_mark
under the pass): such marks are turned into operation boundaries in the trace read here. A
program that marks nothing is one operation. Never checks a crash image (harness/check/program_check.py).
"""
from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from crashcheck.crashsim.trace import Event, Trace, TraceError, read_trace
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.supervise import run_supervised
from crashcheck.harness.target import tracers

SEED = "{seed}"
# A pmreorder marker: NAME.BEGIN / NAME.END (pmreorder's own convention for EMIT_LOG text).
MARKER = re.compile(r"^(?P<name>.+)\.(?P<end>BEGIN|END)$")
# The traced run's wall-clock allowance (pmemcheck gets tracers.SLOWDOWN times as long).
RUN_TIMEOUT_S = 60.0


def resolve(program: str) -> str:
    """PROGRAM as an absolute path, or UsageError: it must exist and be executable (a bare name is
    looked up on PATH, as a shell would)."""
    if not program:
        raise UsageError("no program given: crashcheck run [options] -- PROGRAM ARGS...")
    found = shutil.which(program) if "/" not in program else program
    if found is None or not os.path.exists(found):
        raise UsageError(f"program {program!r} does not exist")
    if os.path.isdir(found) or not os.access(found, os.X_OK):
        raise UsageError(f"program {program!r} is not an executable file")
    return os.path.abspath(found)


def with_seed(argv: list[str], seed: int) -> list[str]:
    """ARGV with every `{seed}` replaced by SEED."""
    return [a.replace(SEED, str(seed)) for a in argv]


@dataclass
class TracedProgram:
    """One traced run of the program."""
    trace: Trace
    argv: list[str]               # as run ({seed} replaced)
    ops: dict[int, str]           # operation number -> its name (markers) or "operation N"
    marked: bool                  # the program marked operations (else the run is one)
    schedule: str | None          # the schedule file the scheduler wrote (threaded runs)
    output: str                   # the tail of what the program printed
    markers: list[tuple[int, str]]  # pmreorder markers (event index, NAME.BEGIN/NAME.END), in trace order


def program_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment of the program's and the commands' runs: ours without crashcheck's own
    variables, libpmem told the file is PM (so it flushes with cache-line flushes, not msync)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_")}
    env.setdefault("PMEM_IS_PMEM_FORCE", "1")
    env.update(extra)
    return env


def run_setup(setup: str, cwd: Path, out: Path) -> None:
    """The set-up command (`--setup`: a shell command, not traced) in CWD, the folder the traced
    program then runs in: what it leaves there (a pool made by `truncate -s 4M pool` or
    `pmempool create`) is the program's starting point. One UsageError line when it fails."""
    end = run_supervised(["/bin/sh", "-c", setup], env=program_env({}), output=out, timeout_s=RUN_TIMEOUT_S, cwd=cwd)
    if end.status != "ok":
        last = end.output.strip().splitlines()[-1:] or [""]
        raise UsageError(f"the set-up command {end.how()} ({setup})" + (f": {last[0][:200]}" if last[0] else ""))


def trace_program(argv: list[str], folder: Path, *, tracer: str, sched: str | None = None,
                  replay_schedule: str | None = None, setup: str | None = None) -> TracedProgram:
    """Run ARGV (program resolved) once in FOLDER (made empty here), traced by TRACER, after SETUP
    (a shell command, untraced, in the same folder). SCHED ("random:SEED", ...) runs it under the
    deterministic scheduler; REPLAY_SCHEDULE (a schedule file's text) replays a recorded
    interleaving exactly. A program that fails, writes no trace or maps no PM is the user's
    mistake: one UsageError line."""
    if folder.exists():
        shutil.rmtree(folder)
    cwd = folder / "cwd"
    cwd.mkdir(parents=True)
    if setup is not None:
        run_setup(setup, cwd, folder / "setup.out")
    trace_path = folder / "run.trace"
    extra: dict[str, str] = {}
    schedule_out = folder / "schedule"
    if replay_schedule is not None:
        (folder / "schedule.in").write_text(replay_schedule)
        extra["CRASHCHECK_SCHED"] = f"replay:{folder / 'schedule.in'}"
        extra["CRASHCHECK_SCHED_OUT"] = str(schedule_out)
    elif sched:
        extra["CRASHCHECK_SCHED"] = sched
        extra["CRASHCHECK_SCHED_OUT"] = str(schedule_out)
    timeout = RUN_TIMEOUT_S
    log = folder / "pmemcheck.log"
    before: dict[str, str] = {}
    if tracer == "pmemcheck":
        # the pass snapshots a file when the program maps it; pmemcheck's log has no contents
        before = snapshot_files(cwd, argv, folder / "before")
        run_argv = tracers.wrap(argv, log, follow=True)
        timeout = RUN_TIMEOUT_S * 4
    else:
        extra["CRASHCHECK_TRACE"] = str(trace_path)
        run_argv = argv
    end = run_supervised(run_argv, env=program_env(extra), output=folder / "run.out", timeout_s=timeout, cwd=cwd)
    shown = " ".join(argv)
    if end.status != "ok":
        last = end.output.strip().splitlines()[-1:] or [""]
        raise UsageError(f"the program {end.how()} in its traced run, before any crash ({shown})"
                         + (f": {last[0][:200]}" if last[0] else ""))
    if tracer == "pmemcheck":
        found = tracers.program_log(log)
        if found is None:
            raise UsageError(f"{argv[0]} mapped no persistent memory pmemcheck sees (no process of the run "
                             "registered a PM file: map it with libpmem's pmem_map_file or libpmemobj)")
        tracers.import_trace(found, trace_path, None, files=before)
    elif not trace_path.is_file():
        raise UsageError(f"{argv[0]} wrote no trace: build it with crashcheck-cc (or give --tracer pmemcheck "
                         "for a binary built any other way)")
    try:
        trace = read_trace(trace_path)
    except TraceError as exc:
        raise UsageError(f"the trace of {shown} cannot be read: {exc}") from None
    if not trace.complete:
        raise UsageError(f"the trace of {shown} is cut ({trace.cut_reason})")
    if not trace.regions:
        raise UsageError(f"{argv[0]} mapped no persistent memory crashcheck sees (a file mapped with "
                         "pmem_map_file, a libpmemobj pool, crashcheck_pool_open or crashcheck_register_pm)")
    markers = pmreorder_markers(trace)
    ops, marked = operations(trace)
    schedule = schedule_out.read_text() if schedule_out.is_file() else None
    return TracedProgram(trace, argv, ops, marked, schedule, end.output, markers)


# Files copied before a run under pmemcheck: at most this many, each at most SNAPSHOT_MAX bytes.
SNAPSHOT_FILES = 64
SNAPSHOT_MAX = 1 << 32


def snapshot_files(cwd: Path, argv: list[str], dest: Path) -> dict[str, str]:
    """Copies of the files a run under pmemcheck may map as PM, made before it starts: the files
    of its folder (what --setup left) and the files its arguments name. Path as the program sees
    it (resolved) -> the copy."""
    names = [p for p in sorted(cwd.rglob("*")) if p.is_file()]
    names += [Path(a) if os.path.isabs(a) else cwd / a for a in argv[1:]]
    out: dict[str, str] = {}
    for name in names:
        if len(out) == SNAPSHOT_FILES:
            break
        try:
            real = os.path.realpath(name)
            if real in out or not os.path.isfile(real) or os.path.getsize(real) > SNAPSHOT_MAX:
                continue
            dest.mkdir(parents=True, exist_ok=True)
            copy = dest / str(len(out))
            shutil.copyfile(real, copy)
        except OSError:
            continue
        out[real] = str(copy)
    return out


def pmreorder_markers(trace: Trace) -> list[tuple[int, str]]:
    """TRACE's pmreorder markers as (event index, text), before operations() turns them into
    operation boundaries: what a checker is told (PMREORDER_MARKERS) and what engines key on."""
    out = []
    for i, ev in enumerate(trace.events):
        if ev.kind == "mark":
            text = ev.data.decode("utf-8", "replace")
            if MARKER.match(text):
                out.append((i, text))
    return out


def operations(trace: Trace) -> tuple[dict[int, str], bool]:
    """Name TRACE's operations, turning pmreorder marker marks into op_begin/op_end events in place
    (same positions, so every event index stays). Operation numbers of crashcheck_op_begin are
    kept; marker operations are numbered after them in the order they begin. A marker END closes
    the latest open operation of its name and thread; an END without a BEGIN is left a mark."""
    ops: dict[int, str] = {}
    for ev in trace.events:
        if ev.kind == "op_begin":
            ops.setdefault(ev.addr, f"operation {ev.addr}")
    next_op = max(ops, default=-1) + 1
    open_ops: dict[tuple[int, str], list[int]] = {}
    events = trace.events
    for i, ev in enumerate(events):
        if ev.kind != "mark":
            continue
        m = MARKER.match(ev.data.decode("utf-8", "replace"))
        if not m:
            continue
        name = m["name"]
        if m["end"] == "BEGIN":
            op = next_op
            next_op += 1
            ops[op] = name
            open_ops.setdefault((ev.tid, name), []).append(op)
            kind = "op_begin"
        else:
            stack = open_ops.get((ev.tid, name))
            if not stack:
                continue
            op = stack.pop()
            kind = "op_end"
        events[i] = Event(seq=ev.seq, tid=ev.tid, kind=kind, sub="", addr=op, size=0, data=b"", site=ev.site)
    return ops, bool(ops)


__all__ = ["MARKER", "SEED", "TracedProgram", "operations", "pmreorder_markers", "program_env", "resolve", "run_setup",
           "snapshot_files", "trace_program", "with_seed"]
