"""Persistency-model vocabulary: model options, failure-atomic pieces, and splitting stores into them.

Owns: what a "piece" is and how a logged store becomes pieces. The rules that decide which pieces
are guaranteed or pending live in crashsim/simulate.py (the fast, incremental simulator) and,
written for clarity instead of speed, in crashsim/reference.py. (What a recovered state is judged
against, the reference models of a structure's operations, is specs/, not this.)

Models (see docs of crashsim/simulate.py for the full statement):
  adr   caches are volatile; per cache line, pieces persist in trace order; a flush followed by a
        fence of the flushing thread guarantees every earlier piece of the line; an NT store is
        guaranteed at its thread's next fence.
  eadr  caches are persistent; a crash leaves a prefix of the global piece order.
  pmreorder  pmreorder's flush-only view: as adr, except that a cached piece reaches PM only once
        a flush of its line covers it (adr also lets an unflushed piece persist by eviction): at
        a crash, unflushed pieces are lost in every state.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import CrashcheckError

MODELS = ("adr", "eadr")                   # the hardware's models (fuzz, structures)
# every model a trace can be read under: pmreorder's flush-only view is offered by `crashcheck run`
ALL_MODELS = MODELS + ("pmreorder",)


class ModelError(CrashcheckError, ValueError):
    """Model options that make no sense (one line for the user)."""


@dataclass(frozen=True)
class ModelOptions:
    """How a trace is read as a persistency model.

    model               "adr" (x86 ADR, default), "eadr" or "pmreorder" (adr, flush-only).
    clflush_guarantees  adr only: a clflush guarantees its line at once, without a fence.
                        (Off by default: clflush is treated like clflushopt.) When on, every
                        clflush is also a crash point, since durability changes there.
    line_size           cache-line size in bytes; None takes the trace's header value.
    atomic_unit         failure-atomic unit in bytes: stores are split into pieces that never
                        cross an aligned unit, and each piece persists entirely or not at all.
    """
    model: str = "adr"
    clflush_guarantees: bool = False
    line_size: int | None = None
    atomic_unit: int = 8

    def validate(self, trace_line_size: int = 64) -> int:
        """Check the options; return the effective line size."""
        if self.model not in ALL_MODELS:
            raise ModelError(f"unknown persistency model {self.model!r} (known: {', '.join(ALL_MODELS)})")
        line = self.line_size or trace_line_size
        for name, value in (("line size", line), ("atomic unit", self.atomic_unit)):
            if value <= 0 or value & (value - 1):
                raise ModelError(f"{name} must be a power of two, not {value}")
        if self.atomic_unit > line:
            raise ModelError(f"atomic unit ({self.atomic_unit}) is larger than the line size ({line})")
        return line


class Piece:
    """One failure-atomic piece of a logged store.

    `id` numbers pieces in trace order across the whole trace, so comparing ids compares program
    (global recorded) order. `key` = (event index, part) names the piece for people and tests.
    `region`/`off` place it in a PM region; `addr` is absolute; `img` is its offset in a post-crash
    image (crashcheck.crashsim.layout: region 0's offsets are the same; the simulator sets it). `g` becomes True once the piece
    is guaranteed durable (set by the simulator). `unordered`: a piece of a memset, memcpy,
    memmove or libpmem copy (UNORDERED_ORIGINS), whose pieces in one line persist in any order.
    """
    __slots__ = ("id", "seq", "part", "tid", "nt", "region", "off", "addr", "data", "line", "slot", "g",
                 "unordered", "img")

    def __init__(self, id: int, seq: int, part: int, tid: int, nt: bool, region: int, off: int,
                 addr: int, data: bytes, line: int, slot: int, unordered: bool = False,
                 img: int | None = None) -> None:
        self.id = id
        self.seq = seq
        self.part = part
        self.tid = tid
        self.nt = nt
        self.region = region
        self.off = off
        self.addr = addr
        self.data = data
        self.line = line
        self.slot = slot
        self.g = False
        self.unordered = unordered
        self.img = off if img is None else img

    @property
    def key(self) -> tuple[int, int]:
        return (self.seq, self.part)

    @property
    def end(self) -> int:
        return self.addr + len(self.data)

    def describe(self) -> str:
        kind = "nt " if self.nt else ""
        return f"{kind}e{self.seq}.{self.part}@r{self.region}+0x{self.off:x}/{len(self.data)}"

    def __repr__(self) -> str:
        return f"Piece({self.describe()})"


# Stores whose 8-byte pieces within one cache line may persist in any order: a copy or fill done
# by a library routine or a compiler lowering is one trace event, but its stores are not issued
# in address order (a 40-byte memset compiles to overlapping stores, last bytes first:
# docs/pmemcheck.md; libc and libpmem copy with vector and non-temporal stores in their own
# order). Pieces of one such store in one line form a set that persists as any subset.
UNORDERED_ORIGINS = frozenset({"memset", "memcpy", "memmove", "libpmem"})
# Stores made inside a precompiled library call (libpmemobj under the pass: its undo log, its
# allocator), logged at the call's return from a shadow of the pool (instrument/runtime/
# rt_shadow.c). The library persisted them before it returned, so each is durable the moment it
# is logged, and with it every earlier store to its cache line (ADR: the library's flush of the
# line took them along) or of its thread (eADR: the library's fence drained the store buffer).
DURABLE_ORIGINS = frozenset({"library"})
# A set of more unordered pieces than this in one line (an atomic unit below 8 bytes) keeps
# address order instead: 2^n states per line would drown every other choice.
MAX_UNORDERED = 10


def split_points(addr: int, size: int, unit: int) -> list[tuple[int, int]]:
    """(start, end) of each failure-atomic piece of a SIZE-byte write at ADDR.

    Pieces never cross an aligned UNIT boundary: a 3-byte store at offset 6 with 8-byte units is
    two pieces, [6, 8) and [8, 9).
    """
    out = []
    pos, end = addr, addr + size
    while pos < end:
        nxt = min((pos // unit + 1) * unit, end)
        out.append((pos, nxt))
        pos = nxt
    return out
