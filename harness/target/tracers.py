"""The second tracer: a traced run under Valgrind's pmemcheck instead of the pass.

Owns finding pmemcheck ($CRASHCHECK_PMEMCHECK, then `pmemcheck` on PATH, then a `valgrind` on
PATH that has the pmemcheck tool), the command line and limits of a driver run under it, and
turning its store log into the run's trace (crashsim/pmemcheck_import.py). The driver's runtime
tells pmemcheck the pool file, the operations and the PM objects (instrument/runtime/rt_valgrind.c),
so the imported trace has what the pass's would have, except what docs/pmemcheck.md lists
(NT stores and locked instructions are plain stores, a clflush brings a fence, no threads).
Pool contents before a run that opens an existing pool are given to the import as its initial
image (the log does not record them).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

from crashcheck.crashsim.pmemcheck_import import import_log
from crashcheck.crashsim.trace import TraceError
from crashcheck.harness.core.defaults import TRACERS
from crashcheck.harness.core.errors import SetupError, UsageError

ENV = "CRASHCHECK_PMEMCHECK"
# A run under pmemcheck with --log-stores is about 75x slower than native (../shared/tools
# README), and Valgrind's start-up takes a while: each operation's allowance grows accordingly.
SLOWDOWN = 100
STARTUP_S = 5.0
# Valgrind reserves address space of its own beyond what the program maps.
EXTRA_AS = 4 << 30
# Stack frames logged per store for a user's program: libpmem's memset and memcpy paths are 2-4
# frames deep below the user's call (1, pmemcheck's default, names only libpmem.so).
STACK_DEPTH = 6


@lru_cache(maxsize=None)
def _probe(exe: str) -> bool:
    """EXE runs pmemcheck (a pmemcheck wrapper, or a valgrind that has the tool): its help lists
    pmemcheck's own --log-stores option (a valgrind without the tool fails to start it)."""
    try:
        res = subprocess.run(_prefix(exe) + ["--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    return res.returncode == 0 and "--log-stores" in res.stdout


def _prefix(exe: str) -> list[str]:
    return [exe, "--tool=pmemcheck"] if Path(exe).name.startswith("valgrind") else [exe]


def pmemcheck_command() -> list[str]:
    """The command that starts pmemcheck (before its options), or UsageError saying how to get it."""
    env = os.environ.get(ENV)
    if env:
        if not (os.path.isfile(env) and os.access(env, os.X_OK)):
            raise UsageError(f"${ENV} is {env!r}, which is not an executable file (point it at a "
                             "pmemcheck wrapper or a valgrind that has the pmemcheck tool)")
        if not _probe(env):
            raise UsageError(f"${ENV}={env} does not run pmemcheck (`{' '.join(_prefix(env))} --help` does not list its options)")
        return _prefix(env)
    for name in ("pmemcheck", "valgrind"):
        exe = shutil.which(name)
        if exe and _probe(exe):
            return _prefix(exe)
    raise UsageError("--tracer pmemcheck needs Valgrind's pmemcheck (PMDK's Valgrind fork; Debian does not "
                     f"package it): put `pmemcheck` on PATH or set ${ENV} to its wrapper or valgrind binary")


def wrap(argv: list[str], log: Path, *, follow: bool = False) -> list[str]:
    """ARGV (a driver run) under pmemcheck, its store log (with stack traces) to LOG. FOLLOW (a
    user's program, `crashcheck run`): Valgrind follows exec and forks (a `sh -c '... && exec
    prog'` wrapper traces prog, not sh), each process logging to LOG with `%p` (its pid) before
    the suffix (program_log picks the one that wrote PM), and stacks go STACK_DEPTH frames deep,
    so a store made inside libpmem is named by the user's call (pmemcheck_import picks the frame)."""
    # --fullpath-after= (empty): stack traces name whole source paths, not bare file names, so
    # sites read as the pass's do (relative to the project root in records)
    opts = ["--log-stores=yes", "--log-stores-stacktraces=yes", "--fullpath-after="]
    if follow:
        opts += ["--trace-children=yes", f"--log-stores-stacktraces-depth={STACK_DEPTH}",
                 f"--log-file={log.with_name(log.stem + '.%p' + log.suffix)}"]
    else:
        opts.append(f"--log-file={log}")
    return pmemcheck_command() + opts + ["--"] + argv


def program_log(log: Path) -> Path | None:
    """The store log of the process that registered PM in a run wrapped with FOLLOW (LOG as given
    to wrap); None when none did. Several: UsageError (crashcheck traces one process)."""
    wrote = []
    for found in sorted(log.parent.glob(log.stem + ".*" + log.suffix)):
        with open(found, errors="replace") as f:
            if "REGISTER_FILE;" in f.read():
                wrote.append(found)
    if len(wrote) > 1:
        pids = ", ".join(p.name[len(log.stem) + 1:-len(log.suffix)] for p in wrote)
        raise UsageError(f"several processes of the run mapped PM under pmemcheck (pids {pids}): "
                         "crashcheck traces one; run the others in --setup")
    return wrote[0] if wrote else None


def limits_ms(base_ms: int, op_ms: int, cap_ms: int) -> tuple[int, int, int]:
    """A traced run's time allowance (supervise.run_timeout_s's BASE_MS, OP_MS, CAP_MS) under
    pmemcheck: each operation may take SLOWDOWN times as long, the run Valgrind's start-up more;
    the cap stays the pass's plus that start-up, so a structure that hangs under pmemcheck is
    still stopped within about two minutes (a whole history there takes seconds)."""
    startup_ms = int(STARTUP_S * 1000)
    return base_ms + startup_ms, op_ms * SLOWDOWN, cap_ms + startup_ms


def import_trace(log: Path, trace: Path, image: Path | None, regions: list[Path] | None = None,
                 files: dict[str, str] | None = None) -> None:
    """Write the trace of the run that left LOG; IMAGE holds the pool's bytes before the run
    (None: a pool the run created, all zero), REGIONS those of the regions past it that the run
    was given (`driver run --region`: a recovery of a post-crash image; the log does not record
    file contents, so without them they would start all zero); FILES, a file's path as the
    program's process saw it -> a copy of its bytes before the run (a pool that existed before
    it: `crashcheck run --setup`). A log that cannot be read is the tracer's fault, never the
    structure's: SetupError."""
    images = [str(image)] + [str(r) for r in regions or []] if image else []
    try:
        import_log(log, trace, images=images, spare_images=True, files=files or {})
    except (TraceError, OSError, ValueError) as exc:
        raise SetupError(f"the pmemcheck store log of a traced run could not be imported: {exc}") from None


__all__ = ["STACK_DEPTH", "TRACERS", "import_trace", "limits_ms", "pmemcheck_command", "program_log", "wrap"]
