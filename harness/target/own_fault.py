"""Crashes in crashcheck's own code: set-up errors, never bugs of the structure.

Owns reading the line instrument/runtime/rt_fault.c writes on stderr when a fatal signal's fault
lies in crashcheck's own code (trees/common: driver, pool, allocator, checks; the runtime; the
checker runner): `crashcheck-fault: signal=11 cause=reentered fn=0x... frame=0x... module=PATH`.
The function and source line are named with llvm-symbolizer-16 (addr2line if it is missing), and
the run ends with a SetupError: one line naming the frame and the likely cause, exit 2, no bug
record. The crash-free run and the traced recovery of an image (harness/check/traced_run.py) and every
crash-state check of the runner (crashcheck.crashsim.runner_client.Runner's `vet`, set by harness/check/session.py) pass
what the driver printed through `check`. Which faults are crashcheck's own is rt_fault.c's rule
(docs/trees.md, "Crashes in crashcheck's own code").
"""
from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crashcheck.harness.core.errors import SetupError
from crashcheck.harness.target import toolchain

ROOT = Path(__file__).resolve().parents[2]
LINE = re.compile(r"^crashcheck-fault: signal=(\d+) cause=(\w+) fn=0x([0-9a-f]+) frame=0x([0-9a-f]+) "
                  r"module=(.*)$", re.M)

CAUSES = {
    "reentered": ("was entered again while it ran (a call crashcheck's code made came back into it)",
                  "a hook that sends a call of crashcheck's code back into it: a header forced in by "
                  "--cflags, --ldflags -Wl,--wrap=..., or a function of the structure named like one "
                  "crashcheck calls (malloc, free, ...)"),
    "alone": ("crashed with no code of the structure on the stack",
              "a flag or hook that reached crashcheck's code (--common-cflags, --ldflags), the adapter "
              "calling in wrongly (a bad cc_adapter entry or handle), or memory the structure overwrote"),
}


@dataclass(frozen=True)
class Fault:
    signal: int
    cause: str
    fn: int
    frame: int
    module: str


def find(text: str | None) -> Fault | None:
    """The last crashcheck-fault line in TEXT (a process's output), or None."""
    found = list(LINE.finditer(text or ""))
    if not found:
        return None
    m = found[-1]
    return Fault(int(m[1]), m[2], int(m[3], 16), int(m[4], 16), m[5].strip())


def _symbolize(module: str, addr: int) -> tuple[str, str] | None:
    """(function, file:line) of ADDR in MODULE, or None when no symbolizer knows it."""
    tools = [(f"llvm-symbolizer-{toolchain.current().major}", ["--functions=linkage", f"--obj={module}", hex(addr)]),
             ("llvm-symbolizer", ["--functions=linkage", f"--obj={module}", hex(addr)]),
             ("addr2line", ["-f", "-e", module, hex(addr)])]
    for tool, args in tools:
        if shutil.which(tool) is None:
            continue
        try:
            out = subprocess.run([tool, *args], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.TimeoutExpired):
            continue
        lines = [x.strip() for x in out.splitlines() if x.strip()]
        if len(lines) >= 2 and lines[0] != "??":
            where = lines[1]
            path, _, rest = where.partition(":")
            try:
                path = str(Path(path).resolve().relative_to(ROOT))
            except ValueError:
                pass
            line = rest.split(":")[0]
            return lines[0], f"{path}:{line}" if line and line != "0" else path
    return None


def describe(fault: Fault) -> str:
    """One line: the signal, the frame named, what happened and its likely cause."""
    from crashcheck.harness.core.supervise import signal_name
    named = _symbolize(fault.module, fault.frame)
    frame = f"{named[0]} ({named[1]})" if named else f"{Path(fault.module).name}+{fault.frame:#x}"
    what, likely = CAUSES.get(fault.cause, CAUSES["alone"])
    return (f"died of {signal_name(fault.signal)} in crashcheck's own code, not in the structure: {frame} "
            f"{what}; likely cause: {likely}")


def check(text: str | None, who: str) -> None:
    """Raise SetupError if TEXT (what WHO printed before it died) holds a crashcheck-fault line."""
    fault = find(text)
    if fault is not None:
        raise SetupError(f"{who} {describe(fault)} (a set-up error: no bug recorded)")


__all__ = ["Fault", "check", "describe", "find"]
