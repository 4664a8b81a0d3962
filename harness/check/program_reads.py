"""Program mode's read logs: what a checker or recovery command built with crashcheck-cc read of
the image files, in order (instrument/runtime/rt_readlog.c writes them).

Owns the environment that asks a command for its log, reading the logs one command run left, and
the verdict on whether they can be trusted: the command must be built with the pass (a log
exists, with check loads compiled in), must have mapped every image file it names through
pmem_map_file or crashcheck_pool_open in one process, must not have opened one with libpmemobj
(whose reads happen in the precompiled library), and its log must be whole. When it cannot be
trusted, `why` says so in words; lazy exploration then falls back to checking states one by one.
Never decides crash states (harness/check/program_lazy.py replays the records).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

MAGIC = 0x4C52434B
HEADER = struct.Struct("<IIIIQQ")
RECORD = struct.Struct("<IIQ")
STORE = 0x80000000
CHECK_LOADS, OPAQUE, TRUNCATED, FORKED = 1, 2, 4, 8


@dataclass(frozen=True)
class Access:
    """One logged access: image number, offset in that image's file, length, a store or a load."""
    image: int
    off: int
    size: int
    store: bool


@dataclass
class Reads:
    """The accesses of one command run, in order, or why they cannot be trusted."""
    accesses: list[Access]
    why: str = ""            # "": trusted

    @property
    def ok(self) -> bool:
        return not self.why


def env(log: Path, files: list[Path]) -> dict[str, str]:
    """The variables that make a command built with crashcheck-cc log its reads of FILES to LOG.PID."""
    return {"CRASHCHECK_READ_LOG": str(log), "CRASHCHECK_READ_IMAGES": "\n".join(str(f.resolve()) for f in files)}


def clear(log: Path) -> None:
    """Remove the logs an earlier run left at LOG."""
    for p in log.parent.glob(log.name + ".*"):
        p.unlink(missing_ok=True)


def _parse(data: bytes) -> tuple[int, int, list[Access]] | None:
    """(flags, images mapped bitmask, accesses) of one log file, or None if it is not one."""
    if len(data) < HEADER.size:
        return None
    magic, _version, flags, mapped, count, cap = HEADER.unpack_from(data)
    if magic != MAGIC:
        return None
    if count > cap:
        flags |= TRUNCATED
        count = cap
    out = []
    pos = HEADER.size
    for what, size, off in RECORD.iter_unpack(data[pos:pos + count * RECORD.size]):
        out.append(Access(what & 0xFF, off, size, bool(what & STORE)))
    return flags, mapped, out


def collect(log: Path, named: set[int], who: str) -> Reads:
    """The reads of the one command run (WHO: "the checker", "recovery") whose logs are at LOG.PID,
    which names the image files NAMED ({image}: 0, {image1}: 1, ...)."""
    logs = []
    for p in sorted(log.parent.glob(log.name + ".*")):
        parsed = _parse(p.read_bytes())
        if parsed is not None:
            logs.append(parsed)
    if not logs:
        return Reads([], f"{who} is not built with crashcheck-cc: it logged no reads")
    if not any(flags & CHECK_LOADS for flags, _, _ in logs):
        return Reads([], f"{who} was built with CRASHCHECK_PASS_CHECK_LOADS=0: its loads are not seen")
    mapping = [(flags, mapped, acc) for flags, mapped, acc in logs if mapped]
    if len(mapping) > 1:
        return Reads([], f"{who} read the image in {len(mapping)} processes (their order is not known)")
    if any(flags & OPAQUE for flags, _, _ in logs):
        return Reads([], f"{who} opens the image with libpmemobj, whose own reads crashcheck does not see")
    if not mapping:
        return Reads([], f"{who} did not map the image with pmem_map_file or crashcheck_pool_open, "
                         "so its reads are not seen")
    flags, mapped, acc = mapping[0]
    missing = sorted(k for k in named if not mapped >> k & 1)
    if missing:
        name = "{image}" if missing[0] == 0 else f"{{image{missing[0]}}}"
        return Reads([], f"{who} did not map {name} with pmem_map_file or crashcheck_pool_open, "
                         "so its reads of it are not seen")
    if flags & FORKED:
        return Reads([], f"{who} touched the image in a forked child, whose reads are not logged")
    if flags & TRUNCATED:
        return Reads([], f"{who} touched more of the image than its read log holds")
    return Reads(acc)


__all__ = ["Access", "Reads", "clear", "collect", "env"]
