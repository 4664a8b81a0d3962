"""Running code under test as a supervised child: the traced driver runs (the crash-free history,
and recovery of a post-crash image).

Owns how such a run is started, bounded and stopped, and how its end is described; never judges
results (harness/check/pipeline.py, specs/) and never parses what the structure printed.

Design
- The driver runs in its own session and process group, under limits (RLIMIT_AS, RLIMIT_CPU,
  RLIMIT_FSIZE, no core dumps) and a wall-clock deadline. At the deadline, and again after every
  run however it ended, the whole group is SIGKILLed, so a grandchild the structure forked cannot
  outlive the run. (One that left the group with setsid() is killed when the command ends:
  harness/core/strays.py.) A stopped process (SIGSTOP) is hung: nobody would ever continue it. A run
  still going after STOP_POLL_S is checked for one every STOP_POLL_S (from /proc), and ends as
  "stopped" at once instead of at the deadline.
- Its stdout and stderr go to one file, never a pipe: a grandchild that keeps them open cannot
  make us wait for an end of file. Only the tail is read back (OUTPUT_TAIL_BYTES, OUTPUT_TAIL_LINES),
  decoded with errors="replace". The driver's results go to their own file (`run --results`).
- A structure may kill its parent (kill(getppid(), SIGKILL)). That must not be crashcheck, so the
  driver runs under a shield that then is the parent: it waits for the driver, passes on its exit
  status or signal (it re-raises the signal on itself) and dies in our place. Its own deadline is
  only a backstop behind ours. The driver notices a dead parent after each operation (`!orphan I`
  in its results) and stops.
- The shield is ours, build/bin/crashcheck-shield (crashsim/shield/shield.c): it sets the limits
  too, one exec per run. Without it (a build that predates it), util-linux `prlimit` sets the
  limits and execs coreutils `timeout -s KILL` as the shield: two execs, about 2 ms more CPU per
  run on the 2-core machine, which a program-mode run pays per judged image.
"""
from __future__ import annotations

import functools
import os
import resource
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from crashcheck.harness.core import paths, strays
from crashcheck.specs.oracle import signal_name

OUTPUT_TAIL_BYTES = 4096
OUTPUT_TAIL_LINES = 20
FSIZE_LIMIT = 256 << 20        # bytes per file: the trace, the results, the captured output
STOP_POLL_S = 0.25             # how often a run that is still going is checked for stopped processes
# Address space beyond the memory allowance (which counts the pool): the driver binary, its
# libraries, the trace runtime's buffers and thread stacks (a traced driver with an 8 MiB pool
# maps about 15 MiB in all before the structure allocates anything).
AS_HEADROOM = 128 << 20
SHIELD = "crashcheck-shield"   # the driver's parent, in build/bin (crashsim/shield/shield.c)


def _resident_kb() -> int:
    """This process's resident high-water mark in KiB (VmHWM; 0 if unknown). Linux keeps the
    high-water mark of the memory a child had before its exec: a forked child's starts at our
    resident size, a vforked one's (what subprocess uses when it can) is ours, our peak. So a
    child's ru_maxrss is at least this: a large pytest or Dask worker made every driver it ran
    look as if it had used half its memory limit, and a plain crash read as running out of memory."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class RunEnd:
    """How a supervised run ended.

    status   "ok" (exit 0), "exit" (other exit status), "signal", "timeout" (the deadline ran
             out), "stopped" (the deadline ran out while it was stopped, e.g. by SIGSTOP),
             "parent-killed" (it killed its parent process, the supervisor)
    """
    status: str
    code: int | None = None
    signal: int | None = None
    elapsed: float = 0.0
    timeout_s: float = 0.0
    output: str = ""             # tail of what it printed on stdout and stderr
    errors: str = ""             # tail of its stderr alone (only when run_supervised had ERRORS)
    maxrss_kb: int = 0
    inherited_kb: int = 0        # our own resident high-water mark when we started it (_resident_kb)
    mem_limit: int = 0           # the RLIMIT_AS it ran under (bytes, 0: none)
    stray: bool = False          # processes of its group were still running after it ended

    @property
    def memory_exhausted(self) -> bool:
        """It died near its address-space limit (a heuristic: its peak resident size was at least
        half the limit; the limit counts address space, which is at least the resident size)."""
        return (self.status in ("signal", "exit") and self.mem_limit > 0
                and self.maxrss_kb * 1024 >= self.mem_limit // 2
                and self.maxrss_kb > self.inherited_kb)

    def how(self) -> str:
        """In words: how the run ended."""
        if self.memory_exhausted:
            return (f"ran out of memory (limit {self.mem_limit >> 20} MiB), then "
                    + (f"died of {signal_name(self.signal)}" if self.status == "signal" else
                       f"exited with status {self.code}"))
        if self.status == "signal":
            return f"died of {signal_name(self.signal)}"
        if self.status == "exit":
            return f"exited with status {self.code}"
        if self.status == "timeout":
            return f"did not finish within {self.timeout_s:.1f} s"
        if self.status == "stopped":
            return f"stopped itself ({signal_name(self.signal)})"
        if self.status == "parent-killed":
            return "killed its parent process (crashcheck's supervisor)"
        return "exited with status 0"

    def how_key(self) -> str:
        """`how` without numbers that vary from run to run: part of a finding's group, in the
        words of crashcheck.specs.oracle.end_key (a follow-up operation after recovery that ends the same
        way is the same bug)."""
        if self.memory_exhausted:
            return "memory limit"
        if self.status == "signal":
            return signal_name(self.signal)
        if self.status == "exit":
            return f"exit {self.code}"
        return self.status


def output_tail(path: Path) -> str:
    """The last OUTPUT_TAIL_LINES lines (at most OUTPUT_TAIL_BYTES) of a capture file, decoded
    safely: bytes that are not UTF-8 become U+FFFD, control characters other than newline and tab
    become U+FFFD too (they would move a terminal's cursor)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - OUTPUT_TAIL_BYTES))
            raw = f.read(OUTPUT_TAIL_BYTES)
    except OSError:
        return ""
    text = raw.decode("utf-8", "replace")
    text = "".join(c if c in "\n\t" or (c >= " " and c != "\x7f") else "\ufffd" for c in text)
    lines = text.splitlines()[-OUTPUT_TAIL_LINES:]
    if size > OUTPUT_TAIL_BYTES and lines:
        lines[0] = "..." + lines[0]
    return "\n".join(lines)


def run_timeout_s(nops: int, base_ms: int, op_ms: int, cap_ms: int, deadline: float | None = None) -> float:
    """The wall-clock allowance of a traced run of NOPS operations: BASE_MS plus OP_MS per
    operation, at most CAP_MS, and never past DEADLINE (time.monotonic(); the caller's budget)."""
    t = min(cap_ms, base_ms + op_ms * nops) / 1000.0
    if deadline is not None:
        t = min(t, max(0.05, deadline - time.monotonic()))
    return t


def run_supervised(argv: list[str], *, env: dict[str, str], output: Path, timeout_s: float,
                   mem_bytes: int = 0, cwd: Path | None = None, errors: Path | None = None) -> RunEnd:
    """Run ARGV under supervision (see the module's design note); its stdout and stderr go to
    OUTPUT, or its stderr to ERRORS when given (then `output` holds stdout's tail, then stderr's,
    and `errors` stderr's alone). MEM_BYTES is the memory allowance (0: no address-space limit);
    CWD its working folder (default ours)."""
    if strays.TOKEN in os.environ:     # a daemon it starts is found by it after the command
        env = {**env, strays.TOKEN: os.environ[strays.TOKEN]}
    mem_limit = mem_bytes + AS_HEADROOM if mem_bytes else 0
    cpu = int(timeout_s) + 2
    limits = [(resource.RLIMIT_CPU, cpu, "cpu"), (resource.RLIMIT_FSIZE, FSIZE_LIMIT, "fsize"),
              (resource.RLIMIT_CORE, 0, "core")] + ([(resource.RLIMIT_AS, mem_limit, "as")] if mem_limit else [])
    backstop = f"{timeout_s + 5:.3f}"
    # Whoever sets the limits execs the rest: cheaper than a preexec_fn, which makes Python fork
    # instead of vfork (about 6 ms per run on the 2-core machine).
    shield = _shield()
    limited = shield is not None       # the limits are set by a program in front of ARGV
    if shield:
        full = [shield, backstop] + [f"{name}={value}" for _, value, name in limits] + ["--", *argv]
    else:
        shield = _which("timeout", os.environ.get("PATH"))
        full = ([shield, "-s", "KILL", backstop] if shield else []) + list(argv)
        prlimit = _which("prlimit", os.environ.get("PATH"))
        if prlimit:
            full = [prlimit] + [f"--{name}={value}" for _, value, name in limits] + full
            limited = True

    def set_limits() -> None:          # runs in the child between fork and exec
        for res, value, _ in limits:
            resource.setrlimit(res, (value, value))

    t0 = time.monotonic()
    inherited_kb = _resident_kb() if mem_limit else 0     # (read by memory_exhausted, under a limit)
    fd = os.open(output, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    efd = os.open(errors, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600) if errors is not None else fd
    try:
        proc = subprocess.Popen(full, stdin=subprocess.DEVNULL, stdout=fd, stderr=efd, env=env, cwd=cwd,
                                start_new_session=True, preexec_fn=None if limited else set_limits)
    finally:
        os.close(fd)
        if efd != fd:
            os.close(efd)
    pgid = proc.pid                # start_new_session: it leads its own session and group
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        pidfd = None
    deadline = t0 + timeout_s
    timed_out = stopped_sig = 0
    try:
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            left = deadline - time.monotonic()
            # A stopped process is hung now: look for one every STOP_POLL_S of a long run.
            if left <= 0 or (time.monotonic() - t0 > STOP_POLL_S and _stopped(pgid)):
                timed_out = 1
                stopped_sig = _stopped(pgid)
                _kill_group(pgid)
                _, status, ru = os.wait4(proc.pid, 0)
                break
            if pidfd is not None:
                select.select([pidfd], [], [], min(left, STOP_POLL_S))
            else:
                time.sleep(min(0.005, left))
    except BaseException:
        # A signal (SIGINT/SIGTERM end the run) or an error while waiting: the run must not
        # outlive us, writing into a work folder that is being removed.
        _kill_group(pgid)
        try:
            os.wait4(proc.pid, 0)
        except ChildProcessError:
            pass
        raise
    finally:
        if pidfd is not None:
            os.close(pidfd)
    proc.returncode = os.waitstatus_to_exitcode(status)     # reaped here, not by Popen
    orphan = shield is not None and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL \
        and not timed_out and _group_alive(pgid)
    stray = _kill_group(pgid)
    end = RunEnd("ok", elapsed=time.monotonic() - t0, timeout_s=timeout_s, maxrss_kb=ru.ru_maxrss,
                 inherited_kb=inherited_kb, mem_limit=mem_limit, stray=stray and not timed_out)
    if timed_out:
        end.status = "stopped" if stopped_sig else "timeout"
        end.elapsed = time.monotonic() - t0
        end.signal = stopped_sig or signal.SIGKILL
    elif orphan:
        end.status = "parent-killed"
    elif os.WIFSIGNALED(status):
        end.status, end.signal = "signal", os.WTERMSIG(status)
    elif os.WEXITSTATUS(status):
        end.status, end.code = "exit", os.WEXITSTATUS(status)
    else:
        end.code = 0
    end.output = output_tail(output)
    if errors is not None:
        end.errors = output_tail(errors)
        end.output = "\n".join(filter(None, (end.output, end.errors)))
    return end


@functools.lru_cache(maxsize=1)
def _shield() -> str | None:
    """build/bin/crashcheck-shield if it was built and can be run (looked for once)."""
    path = paths.BUILD / "bin" / SHIELD
    return str(path) if os.access(path, os.X_OK) else None


@functools.lru_cache(maxsize=8)
def _which(name: str, path: str | None) -> str | None:
    """shutil.which(NAME) on PATH, looked up once: a program-mode run starts a command per judged
    image, and the search of PATH cost a quarter of a millisecond each time."""
    return shutil.which(name, path=path)


def _kill_group(pgid: int) -> bool:
    """SIGKILL every process of group PGID; True if there was one."""
    try:
        os.killpg(pgid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _stopped(pgid: int) -> int:
    """SIGSTOP if a process of group PGID is stopped (state T), else 0 (read from /proc)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return 0
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command: state, ppid, pgrp, session, ...
        if len(fields) > 2 and int(fields[2]) == pgid and fields[0] in (b"T", b"t"):
            return signal.SIGSTOP
    return 0


__all__ = ["RunEnd", "output_tail", "run_supervised", "run_timeout_s", "signal_name"]
