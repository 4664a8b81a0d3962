"""The traced, supervised runs of the driver: the crash-free history, and recovery of an image.

Owns `driver run` with tracing on: writing the history, running it under harness/core/supervise.py's
limits and deadline, reading its results and trace, and telling apart how a run can go wrong: the
code under test misbehaved (RunFailure, carrying an operation-crash or operation-hang finding of
the operation that was running), the machine is at fault (SetupError: a full work folder, a
driver that could not start), or the driver could not run the history at all (DriverFailure). A
trace cut short is never handed on for exploring: it is a finding when the driver's run ended
early, an error otherwise.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from crashcheck.crashsim.layout import trace_layout
from crashcheck.crashsim.trace import Trace, TraceError, read_trace
from crashcheck.harness.core import defaults
from crashcheck.harness.target import own_fault
from crashcheck.harness.check import base_pool, threads
from crashcheck.harness.target import tracers
from crashcheck.harness.core import workdir as workdirs
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure, SetupError
from crashcheck.specs.model import op_kind
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.session import Session, clean_env
from crashcheck.harness.core.supervise import RunEnd, run_supervised, run_timeout_s


class RunFailure(DriverFailure):
    """The code under test misbehaved in a traced run; FINDING says how and where."""

    def __init__(self, finding: Finding, end: RunEnd, lines: list[str] | None = None) -> None:
        super().__init__(finding.detail)
        self.finding = finding
        self.end = end
        self.lines = lines or []      # the driver's result lines up to where it stopped


def trace_history(session: Session, ops: list, deadline: float | None = None) -> tuple[Trace, list[str]]:
    """Run the traced driver on OPS, checking the structure's invariants after every
    operation; returns the trace and the driver's result lines (results and `!` lines).
    Raises RunFailure when the structure misbehaved (died, hung, exited early): its
    `finding` says how and in which operation. DEADLINE (time.monotonic()) bounds the run."""
    hist = session.workdir / "history"
    hist.write_text(session.history_text(ops))
    sched = None
    if threads.is_threaded(ops):
        # several threads: one at a time under the deterministic scheduler, the schedule taken
        # written beside the trace (harness/check/threads.py)
        sched = threads.sched_env(ops, session.workdir / "schedule.in", session.workdir / "trace.sched")
    # the state once every thread has ended is judged with the results (a `!dump` line,
    # threads.judge): an update another thread's copy undid, which no later lookup of the history
    # read, shows there as what it is (the crash state at the end of the trace would show it
    # only as a lost write, and a structure without PM has none)
    dump = sched is not None
    if sched is None and getattr(ops, "load", 0) and not getattr(ops, "load_traced", False):
        # a load phase is set-up whose crash states are never checked: the runtime starts the
        # trace over at the first checked operation, from the pool's bytes then (as if the load
        # had all reached PM), so neither tracing nor crash-simulating it costs anything
        # (rt_trace.c; crossing histories, issue 50)
        sched = {"CRASHCHECK_TRACE_FROM": str(ops.load)}
    pool, create = session.workdir / "pool", True
    if base_pool.wanted(session):
        # the library's pool creation is no part of the history: each starts from one pool made
        # once, untraced (harness/check/base_pool.py)
        base_pool.copy_to(session, pool)
        create = False
    return run_traced(session, pool, hist, "trace", create=create, check=True,
                      what=f"the traced run of {session.structure.name} died", ok=(0, 1),
                      ops=ops, deadline=deadline, extra_env=sched, dump=dump)


def schedule_taken(session: Session) -> str | None:
    """The schedule file of the last threaded traced run (its text), or None."""
    try:
        return (session.workdir / "trace.sched").read_text()
    except OSError:
        return None


def trace_left(session: Session) -> Trace | None:
    """The trace the last traced history run left, even one cut short (the scheduler ends a
    deadlocked run with its finding as the last event), or None if there is none to read."""
    try:
        return read_trace(session.workdir / "trace", check_images=False)
    except (TraceError, OSError):
        return None


def trace_recovery(session: Session, crashed: Trace, image: bytes, tag: str = "recovery",
                   loads: bool = False) -> Trace:
    """Run the structure's recovery (an empty history on IMAGE, a post-crash image of the trace
    CRASHED) with tracing on (with LOADS, its loads too, if its driver was built with them). The
    regions past the pool (crashcheck.crashsim.layout) go to the driver as image files of their own
    (`run --region`), recovery's regions start from them."""
    lay = trace_layout(crashed)
    pool = session.workdir / f"{tag}.pool"
    pool.write_bytes(image[:lay.sizes[0]] if lay.sizes else image)
    regions = []
    for k, (off, size) in enumerate(zip(lay.offsets[1:], lay.sizes[1:]), 1):
        part = session.workdir / f"{tag}.region{k}"
        part.write_bytes(image[off:off + size])
        regions.append(part)
    trace, _ = run_traced(session, pool, os.devnull, f"{tag}.trace", create=False,
                          what="recovery of a post-crash image failed in the traced run",
                          regions=regions, loads=loads)
    return trace


def run_traced(session: Session, pool: Path, history: str | os.PathLike, tag: str, *, create: bool,
               what: str, ok: tuple[int, ...] = (0,), check: bool = False,
               ops: list | None = None, deadline: float | None = None,
               extra_env: dict[str, str] | None = None, dump: bool = False,
               regions: list[Path] | None = None, loads: bool = False) -> tuple[Trace, list[str]]:
    """`driver run` on POOL with HISTORY (the operations OPS), traced into workdir/TAG (with
    CHECK, invariants checked after every operation), supervised (harness/core/supervise.py);
    the trace and the result lines. A run that died, hung, stopped, left a process behind or
    ended without its `!end` line raises RunFailure; any other exit status outside OK raises
    DriverFailure(WHAT ...). A run that ended normally with a trace cut short raises RunFailure
    too (operation-crash, `trace cut short`): exploring the cut trace would check the crash
    points up to the cut and call the history consistent."""
    ops = ops or []
    trace_path = session.workdir / tag
    results = session.workdir / f"{tag}.results"
    env = clean_env()
    env["CRASHCHECK_TRACE"] = str(trace_path)
    # loads are logged for threaded runs only (threads.sched_env), where persistency races are looked
    # for, and with LOADS (recovery reading a torn store: harness/check/torn_store.py)
    env["CRASHCHECK_TRACE_LOADS"] = "1" if loads else "0"
    for k in ("CRASHCHECK_SCHED", "CRASHCHECK_SCHED_OUT"):
        env.pop(k, None)
    env.update(extra_env or {})
    argv = ([str(session.driver), "run", "--pool", str(pool)] + (["--create"] if create else [])
            + (["--check"] if check else []) + (["--dump"] if dump else [])
            + [arg for r in regions or [] for arg in ("--region", str(r))]
            + ["--results", str(results)])
    s = session.settings
    session.check_driver()
    session.budget.check()
    if session.budget.hard is not None:
        deadline = session.budget.hard if deadline is None else min(deadline, session.budget.hard)
    results.unlink(missing_ok=True)
    argv += ["--size", str(s.pool_size), str(history)]
    mem = (s.mem_mb << 20) + s.pool_size
    limits_ms = (s.run_timeout_ms, s.op_timeout_ms, defaults.RUN_TIMEOUT_CAP_MS)
    pmemcheck = s.tracer == "pmemcheck"
    if pmemcheck:
        # the same driver under Valgrind's pmemcheck, which logs every store; its log becomes
        # the trace (harness/target/tracers.py), so the pass's own trace file is not written
        env.pop("CRASHCHECK_TRACE")
        log, before = session.workdir / f"{tag}.pmemcheck.log", None
        log.unlink(missing_ok=True)
        trace_path.unlink(missing_ok=True)
        if not create:
            before = session.workdir / f"{tag}.before"
            shutil.copyfile(pool, before)
        argv = tracers.wrap(argv, log)
        mem += tracers.EXTRA_AS
        limits_ms = tracers.limits_ms(*limits_ms)
    end = run_supervised(argv, env=env, output=session.workdir / f"{tag}.output", mem_bytes=mem,
                         timeout_s=run_timeout_s(len(ops), *limits_ms, deadline))
    if end.status in ("timeout", "stopped") and session.budget.expired():
        raise OutOfTime()        # the budget ended the run, not a hang of the structure
    if end.status == "signal":
        # died in crashcheck's own code (a flag or hook reached it): a set-up error, no finding
        own_fault.check(end.output, f"the driver of {session.structure.name}")
    import_error = None
    if pmemcheck:
        if not log.exists():
            raise SetupError(f"pmemcheck left no store log ({end.how()}): {end.output.strip()[-300:]}")
        try:
            tracers.import_trace(log, trace_path, before, regions)
        except SetupError as exc:
            import_error = exc      # a run that died early left no log: its finding comes first
    try:
        lines = results.read_bytes().decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    if dump:
        # the final dump is no operation's result: marked like the driver's other `!` lines
        lines = ["!" + x if x.startswith("dump ") or x == "dump" else x for x in lines]
    if "!ready" not in lines or end.code not in ok:
        setup_fault(session, trace_path, end.code, end.output, ready="!ready" in lines)
    if "CRASHCHECK_SCHED_OUT" in (extra_env or {}) and end.status == "exit" and end.code in threads.SCHED_EXIT:
        # the scheduler ended the run: a deadlock, a livelock or a hang (docs/scheduler.md)
        raise RunFailure(threads.sched_finding(end.code, end.output, ops, lines, session.model), end, lines)
    failure = run_failure(end, lines, ops, session.model)
    if failure is not None:
        # the lines go with it: a threaded record's lanes show what the returned operations gave
        raise RunFailure(failure, end, lines)
    if end.code not in ok:
        raise DriverFailure(f"{what} ({end.how()}): {end.output.strip()[-300:]}")
    if import_error is not None:
        raise import_error
    try:
        trace = read_trace(trace_path)
    except TraceError as exc:
        setup_fault(session, trace_path, end.code, end.output, ready=True)
        raise DriverFailure(f"the traced run left no readable trace: {exc}") from None
    if not trace.complete:
        setup_fault(session, trace_path, end.code, end.output, ready=True)
        done = sum(1 for x in lines if not x.startswith("!"))
        detail = (f"the traced run ended normally ({end.how()}) after {done} of {len(ops)} operations, "
                  f"but its trace is cut short ({trace.cut_reason}): the code under test damaged the "
                  "trace (closed or overwrote its file or buffer), or the trace file was cut by "
                  "someone else; nothing after the cut could be checked")
        raise RunFailure(Finding("operation-crash", detail, ("operation-crash", "trace cut short")), end)
    return trace, lines


def setup_fault(session: Session, trace_path: Path, status: int | None, stderr: str, ready: bool) -> None:
    """Raise SetupError if a failed traced run is the machine's fault, not the structure's:
    the work folder filled up, or the driver refused to start (exit 2 with its one-line
    reason before its `!ready` line: the pool could not be created or mapped)."""
    if workdirs.nearly_full(session.workdir, session.settings.pool_size) or "No space left on device" in stderr:
        raise workdirs.full_error(session.workdir)
    if status == 2 and not ready and not began_any_operation(trace_path):
        lines = [line for line in stderr.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else "no reason given"
        raise SetupError(f"the driver of {session.structure.name} could not start: {reason}")


def run_failure(end: RunEnd, lines: list[str], ops: list, model) -> Finding | None:
    """The finding of a traced run that misbehaved, or None. Which operation was running: the one
    its `!fault` line names (the operation and thread a fatal signal hit, docs/trees.md); else the
    one after the last result line (the driver flushes its results after every operation), or,
    past the load phase of a threaded run, the one called and not returned (all of them when
    several were); or the one its `!orphan` line names; before the driver's `!ready` line it is
    the set-up (pool format, the structure's create, or recovery of an image). One cause is one bug: the group is
    the class, the kind of operation and how it ended (crashcheck.specs.oracle.end_key's words, shared with
    follow-up operations after recovery), never the operation's index or the history."""
    ready = "!ready" in lines
    orphan = next((int(x.split()[1]) for x in lines if x.startswith("!orphan ")), None)
    ended = any(x.startswith("!end ") for x in lines)
    stray = next((int(x.split()[1]) for x in lines if x.startswith("!stray ")), None)
    done = sum(1 for x in lines if not x.startswith("!"))
    cls, how, key = "operation-crash", end.how(), end.how_key()
    if orphan is not None or (end.status == "signal" and end.signal == 9 and ended):
        # The driver notices only after the kill has landed, which may be operations later: the
        # operation named is where it was noticed, so the group does not name its kind.
        how, key = "killed its parent process (crashcheck's supervisor)", "parent-killed"
        done = orphan if orphan is not None else done
    elif end.status in ("timeout", "stopped"):
        cls = "operation-hang"
    elif end.status == "parent-killed":
        pass
    elif end.status in ("signal", "exit") or end.memory_exhausted:
        if end.status == "exit" and end.code in (1, 2) and not ready:
            return None      # the driver's own errors (a usage error, a failed recovery)
    elif not ended and end.code == 0 and ops:
        how, key = "exited with status 0 before the history ended", "exit 0 early"
    elif stray is not None or end.stray:
        how, key = "left a process running (killed after the run)", "stray process"
        done = stray if stray is not None else done
    else:
        return None
    fault = fault_line(lines, len(ops))
    if fault is not None and ready and key != "parent-killed":
        # the driver's fault handler named the operation on the thread the signal hit (fault.h)
        thread, done = fault
        where, kind = op_where(model, ops, done, thread), op_kind(model, ops[done])
    elif threads.is_threaded(ops) and ready and done >= ops.load and key != "parent-killed":
        # several threads and no `!fault` line (a hang, a kill, a handler of the structure's own):
        # the operations called and not returned; which of them stopped the run is not known
        where, kind, done = threads_where(model, ops, lines)
    elif done < len(ops) and ready:
        where, kind = op_where(model, ops, done, 0), op_kind(model, ops[done])
    elif done >= len(ops) and ops:
        where, kind = "after the last operation", "end"
    else:
        where, kind = "the set-up (pool format, create or recovery)", "set-up"
    if key == "parent-killed" and kind != "set-up":
        where = ("an operation (the driver noticed it only at the end of the history)" if kind == "end"
                 else f"an operation (the driver noticed it after {where})")
        kind = ""
    detail = f"without any crash, {where} {how}"
    tail = end.output.strip()
    if tail:
        lines_ = tail.splitlines()[-5:]
        shown = " | ".join(lines_)
        detail += f"; its output ended: {shown[-400:]}"
    return Finding(cls, detail, (cls, f"{kind}: {key}" if kind else key),
                   op_index=done if done is not None and done < len(ops) else None)


def op_where(model, ops: list, i: int, thread: int) -> str:
    """Operation I of OPS for a finding's detail, with its thread when it ran on one (THREAD > 0)."""
    return f"`{model.op_text(ops[i])}` (operation {i}{f', thread {thread}' if thread else ''})"


def threads_where(model, ops, lines: list[str]) -> tuple[str, str, int | None]:
    """(where, kind, index) of a threaded run that stopped with no `!fault` line: the one
    operation in flight; or, with several, all of them (kind: theirs when they share it, else
    `in flight`; no index); none in flight: after the last operation, or between two."""
    called = {int(x.split()[2]): int(x.split()[1]) for x in lines if x.startswith("!call ")}
    returned = {int(x.split()[2]) for x in lines if x.startswith("!ret ")}
    flight = [(i, t) for i, t in called.items() if i not in returned]
    if len(flight) == 1:
        i, t = flight[0]
        return op_where(model, ops, i, t), op_kind(model, ops[i]), i
    if flight:
        kinds = {op_kind(model, ops[i]) for i, _ in flight}
        return (f"one of the operations in flight ({', '.join(op_where(model, ops, i, t) for i, t in flight)})",
                kinds.pop() if len(kinds) == 1 else "in flight", None)
    if len(returned) >= len(ops) - ops.load:
        return "after the last operation", "end", len(ops)
    return (f"between operations of the threads ({len(returned)} of {len(ops) - ops.load} returned)",
            "between", None)


def fault_line(lines: list[str], n: int) -> tuple[int, int] | None:
    """(thread, operation) of the first `!fault T I SIG` line naming one of N operations, or None."""
    for x in lines:
        parts = x.split()
        if len(parts) == 4 and parts[0] == "!fault" and all(p.isdigit() for p in parts[1:]) and int(parts[2]) < n:
            return int(parts[1]), int(parts[2])
    return None


def began_any_operation(trace_path: Path) -> bool:
    """The (possibly cut or missing) trace holds an op_begin: the driver got past its set-up."""
    try:
        return any(ev.kind == "op_begin" for ev in read_trace(trace_path, check_images=False).events)
    except (TraceError, OSError):
        return False


__all__ = ["RunFailure", "began_any_operation", "op_where", "run_failure", "run_traced", "schedule_taken", "setup_fault", "trace_history", "trace_left",
           "trace_recovery"]
