"""Reference crash-state enumerator: brute force, written to be obviously right, never fast.

Owns: the persistency rules stated a second time, directly from their definitions, so the fast
simulator (crashsim/simulate.py + crashsim/states.py) can be tested against it. For each crash
point it re-reads the trace prefix, decides per piece whether it is guaranteed, then tries every
subset of the pending pieces and keeps the subsets the model allows. Exponential in the number of
pending pieces: use it on small traces only.

Rules (the same as the fast simulator's, phrased per piece):
  adr   a cached piece P is guaranteed at crash point C if some flush of P's line comes after P
        and before C, and either the flushing thread fences after that flush and before C, or
        (option) the flush is a clflush and clflush alone guarantees. An NT piece is guaranteed
        if its thread fences after it and before C. A subset S of the pending pieces is a legal
        state if, for every line, the persisted cached pieces (guaranteed ones plus S) are a
        prefix of that line's cached pieces in trace order, where the pieces of one memset,
        memcpy, memmove or libpmem copy in one line (at most MAX_UNORDERED of them) count as
        one step: no persisted piece follows a lost one unless both are pieces of that one store
        in that line. NT pieces are unconstrained. A `library` store (model.DURABLE_ORIGINS)
        guarantees, when it is logged, itself and every earlier cached piece of its line.
  pmreorder  as adr, and a cached piece may be in S only if some flush of its line (by any
        thread) comes after it and before C: an unflushed piece is lost in every state.
  eadr  a piece of thread T is guaranteed at crash point C if T fences, or begins or ends an
        operation, after the piece and before C, or if it is the store of a locked instruction
        (T's previous event is a `locked` fence): that instruction drains the buffer after it.
        S is legal if, for every thread, the pieces of S stored by that thread are a prefix, in
        trace order, of that thread's pending pieces, with the same exception for the pieces of
        one such store in one line. A `library` store of T guarantees itself and T's earlier
        pieces.
The image of a state is the initial image with all persisted pieces applied in trace order.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

from .persistency import DURABLE_ORIGINS, MAX_UNORDERED, UNORDERED_ORIGINS, ModelOptions, split_points
from .trace import Event

PieceKey = tuple[int, int]   # (event index, part)


@dataclass(frozen=True)
class RefPiece:
    key: PieceKey
    tid: int
    nt: bool
    off: int          # offset in its region (stores outside every region are skipped)
    data: bytes
    line: int         # absolute line number
    unordered: bool = False   # a piece of a memset/memcpy/memmove/libpmem copy
    region: int = 0


def _together(a: RefPiece, b: RefPiece, pieces: Sequence[RefPiece]) -> bool:
    """A and B are pieces of one unordered store in one line, of at most MAX_UNORDERED pieces
    there: their order is free."""
    if not (a.unordered and b.unordered and a.key[0] == b.key[0] and a.line == b.line):
        return False
    return sum(1 for p in pieces if p.key[0] == a.key[0] and p.line == a.line) <= MAX_UNORDERED


@dataclass
class RefPoint:
    event: int
    kind: str
    op: int | None
    guaranteed: frozenset[PieceKey]
    pending: tuple[PieceKey, ...]
    states: set[frozenset[PieceKey]]

    def image(self, initial: bytes, pieces: dict[PieceKey, RefPiece], kept: frozenset[PieceKey],
              offsets: Sequence[int] = (0,)) -> bytes:
        """The state's image: INITIAL holds the regions laid out at OFFSETS (crashcheck.crashsim.layout;
        default region 0 alone), pieces of other regions are left out."""
        img = bytearray(initial)
        for key in sorted(self.guaranteed | kept):
            p = pieces[key]
            if p.region < len(offsets):
                at = offsets[p.region] + p.off
                img[at:at + len(p.data)] = p.data
        return bytes(img)


def ref_pieces(events: Sequence[Event], options: ModelOptions, line_size: int) -> list[RefPiece]:
    out = []
    for i, ev in enumerate(events):
        if ev.kind not in ("store", "ntstore") or ev.off is None:
            continue
        for part, (a, b) in enumerate(split_points(ev.addr, ev.size, options.atomic_unit)):
            nt = ev.kind == "ntstore"
            out.append(RefPiece((i, part), ev.tid, nt, ev.off + a - ev.addr,
                                ev.data[a - ev.addr:b - ev.addr], a // line_size,
                                ev.sub in UNORDERED_ORIGINS and not nt, ev.region or 0))
    return out


def ref_crash_points(events: Sequence[Event], options: ModelOptions) -> list[tuple[int, str]]:
    """(event index, kind) of every crash point."""
    out = []
    for i, ev in enumerate(events):
        if ev.kind in ("fence", "op_begin", "op_end"):
            out.append((i, ev.kind))
        elif (ev.kind == "flush" and ev.sub == "clflush" and options.clflush_guarantees
              and options.model != "eadr"):
            out.append((i, "clflush"))
    out.append((len(events), "end"))
    return out


def _guaranteed_adr(p: RefPiece, events: Sequence[Event], c: int, options: ModelOptions,
                    line_size: int) -> bool:
    s = p.key[0]
    if p.nt:
        return any(events[f].kind == "fence" and events[f].tid == p.tid for f in range(s + 1, c))
    if any(_library_store(events[f]) and events[f].addr // line_size <= p.line
           <= (events[f].addr + events[f].size - 1) // line_size for f in range(s, c)):
        return True
    for f in range(s + 1, c):
        ev = events[f]
        if ev.kind != "flush" or ev.addr // line_size != p.line:
            continue
        if ev.sub == "clflush" and options.clflush_guarantees:
            return True
        if any(events[g].kind == "fence" and events[g].tid == ev.tid for g in range(f + 1, c)):
            return True
    return False


def _flushed(p: RefPiece, events: Sequence[Event], c: int, line_size: int) -> bool:
    """Some flush of P's line, by any thread, comes after P and before crash point C."""
    return any(events[f].kind == "flush" and events[f].addr // line_size == p.line for f in range(p.key[0] + 1, c))


def _library_store(ev: Event) -> bool:
    return ev.kind == "store" and ev.sub in DURABLE_ORIGINS


def _locked_store(events: Sequence[Event], i: int) -> bool:
    """Event I is a locked instruction's store: its thread's previous event is a `locked` fence."""
    for j in range(i - 1, -1, -1):
        if events[j].tid == events[i].tid:
            return events[j].kind == "fence" and events[j].sub == "locked"
    return False


def _drained_eadr(p: RefPiece, events: Sequence[Event], c: int) -> bool:
    return (_locked_store(events, p.key[0])
            or any(events[f].kind in ("fence", "op_begin", "op_end") and events[f].tid == p.tid
                   for f in range(p.key[0] + 1, c))
            or any(_library_store(events[f]) and events[f].tid == p.tid for f in range(p.key[0], c)))


def _op_in_flight(events: Sequence[Event], c: int) -> int | None:
    """The operation in flight at crash point C: begun before C and not ended at or before C
    (at op_end(i) the operation has returned)."""
    open_ops: list[int] = []
    for i, ev in enumerate(events[:c + 1]):
        if ev.kind == "op_begin" and i < c:
            open_ops.append(ev.addr)
        elif ev.kind == "op_end" and ev.addr in open_ops:
            open_ops.remove(ev.addr)
    return open_ops[-1] if open_ops else None


def reference(events: Sequence[Event], options: ModelOptions | None = None,
              line_size: int = 64, max_pending: int = 16) -> tuple[list[RefPoint], dict[PieceKey, RefPiece]]:
    """Every crash point with its full set of legal states (as sets of kept pending pieces)."""
    options = options or ModelOptions()
    line_size = options.validate(line_size)
    pieces = ref_pieces(events, options, line_size)
    by_key = {p.key: p for p in pieces}
    points = []
    for c, kind in ref_crash_points(events, options):
        before = [p for p in pieces if p.key[0] < c]
        if options.model == "eadr":
            guaranteed = frozenset(p.key for p in before if _drained_eadr(p, events, c))
        else:
            guaranteed = frozenset(p.key for p in before
                                   if _guaranteed_adr(p, events, c, options, line_size))
        pending = tuple(p.key for p in before if p.key not in guaranteed)
        if len(pending) > max_pending:
            raise ValueError(f"reference enumerator: {len(pending)} pending pieces at event {c} "
                             f"(more than {max_pending}); use a smaller trace")
        states = set()
        may_persist = pending
        if options.model == "pmreorder":
            may_persist = tuple(k for k in pending if by_key[k].nt or _flushed(by_key[k], events, c, line_size))
        for r in range(len(may_persist) + 1):
            for subset in combinations(may_persist, r):
                kept = frozenset(subset)
                if _legal(kept, before, guaranteed, pending, options):
                    states.add(kept)
        points.append(RefPoint(c, kind, _op_in_flight(events, c), guaranteed, pending, states))
    return points, by_key


def _legal(kept: frozenset[PieceKey], before: list[RefPiece], guaranteed: frozenset[PieceKey],
           pending: tuple[PieceKey, ...], options: ModelOptions) -> bool:
    persisted = guaranteed | kept
    if options.model == "eadr":
        # per thread, the kept pieces must be a prefix of its pending pieces in trace order
        of = {p.key: p for p in before}
        for tid in {of[k].tid for k in pending}:
            mine = [of[k] for k in pending if of[k].tid == tid]
            if _out_of_order(mine, [p.key in kept for p in mine]):
                return False
        return True
    lines: dict[int, list[RefPiece]] = {}
    for p in before:
        if not p.nt:
            lines.setdefault(p.line, []).append(p)
    for seq in lines.values():
        if _out_of_order(seq, [p.key in persisted for p in seq]):
            return False
    return True


def _out_of_order(seq: Sequence[RefPiece], flags: Sequence[bool]) -> bool:
    """Some piece of SEQ persisted (FLAGS) after a lost one, and the two are not pieces of one
    unordered store in one line."""
    return any(not flags[i] and flags[j] and not _together(seq[i], seq[j], seq)
               for i in range(len(flags)) for j in range(i + 1, len(flags)))
