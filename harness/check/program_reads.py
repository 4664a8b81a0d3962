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
from typing import Iterable, Iterator

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


class Reads:
    """The accesses of one command run, in order, or why they cannot be trusted. Kept packed as
    the log holds them (RECORD, 16 bytes each): a libpmemobj checker makes 12,000-18,000 accesses
    a run, the image cache keeps every judged image's reads for the lazy search, and as Access
    objects they took about 150 bytes each (pmem/pmdk#5461's 600-operation transaction: 1.3 GB)."""
    __slots__ = ("packed", "why")

    def __init__(self, accesses: "Iterable[Access] | bytes" = b"", why: str = "") -> None:
        if not isinstance(accesses, bytes):
            accesses = b"".join(RECORD.pack(a.image | (STORE if a.store else 0), a.size, a.off) for a in accesses)
        self.packed = accesses
        self.why = why            # "": trusted

    @property
    def ok(self) -> bool:
        return not self.why

    def __len__(self) -> int:
        return len(self.packed) // RECORD.size

    def records(self) -> Iterator[tuple[int, int, int, bool]]:
        """(image, offset, size, store) of each access, in order (no Access objects made)."""
        for what, size, off in RECORD.iter_unpack(self.packed):
            yield what & 0xFF, off, size, bool(what & STORE)

    @property
    def accesses(self) -> list[Access]:
        return [Access(*r) for r in self.records()]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reads) and (self.packed, self.why) == (other.packed, other.why)

    def __repr__(self) -> str:
        return f"Reads({len(self)} accesses{', ' + repr(self.why) if self.why else ''})"


def env(log: Path, files: list[Path]) -> dict[str, str]:
    """The variables that make a command built with crashcheck-cc log its reads of FILES to LOG.PID."""
    return {"CRASHCHECK_READ_LOG": str(log), "CRASHCHECK_READ_IMAGES": "\n".join(str(f.resolve()) for f in files)}


def clear(log: Path) -> None:
    """Remove the logs an earlier run left at LOG."""
    for p in log.parent.glob(log.name + ".*"):
        p.unlink(missing_ok=True)


def _parse(data: bytes) -> tuple[int, int, bytes] | None:
    """(flags, images mapped bitmask, accesses packed) of one log file, or None if it is not one."""
    if len(data) < HEADER.size:
        return None
    magic, _version, flags, mapped, count, cap = HEADER.unpack_from(data)
    if magic != MAGIC:
        return None
    if count > cap:
        flags |= TRUNCATED
        count = cap
    return flags, mapped, data[HEADER.size:HEADER.size + count * RECORD.size]


def _used(path: Path) -> bytes:
    """The part of a log file its header says is written: the runtime makes the file room for
    RL_CAP records (16 MiB, sparse), so reading all of it cost a few ms of every judged image."""
    with open(path, "rb") as f:
        head = f.read(HEADER.size)
        if len(head) < HEADER.size:
            return head
        count, cap = HEADER.unpack(head)[4:]
        return head + f.read(min(count, cap) * RECORD.size)


def collect(log: Path, named: set[int], who: str) -> Reads:
    """The reads of the one command run (WHO: "the checker", "recovery") whose logs are at LOG.PID,
    which names the image files NAMED ({image}: 0, {image1}: 1, ...)."""
    logs = []
    for p in sorted(log.parent.glob(log.name + ".*")):
        parsed = _parse(_used(p))
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
