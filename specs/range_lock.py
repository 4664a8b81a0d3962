"""The range-lock reference model (tryLock / releaseLock over ranges, as in T.-D. Nguyen,
"Concurrent Range Locking", bachelor's thesis, TU Munich, 2024), as data.

Owns what `trylock S E` and `release S E` do to the set of held ranges and what they return, in
the text notation a range-lock driver reads and prints. Ranges are inclusive [S, E] of unsigned
64-bit integers, S <= E, written in decimal:

    trylock S E   -> ok    no held range overlaps [S, E]; [S, E] is now held
                     fail  some held range overlaps [S, E]; nothing changes
    release S E   -> ok    exactly [S, E] is held (same S and E); it is released
                     fail  it is not (a range overlapping it, or nothing, is held); nothing changes

A state is a sorted tuple of disjoint held ranges ((S, E), ...). `MODEL` is the paper's lock
(deterministic); `make(spurious=True)` is a weak lock whose trylock may also fail on a free range
(like C++ try_lock), a nondeterministic model: step returns both outcomes. Never runs a lock.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Sequence

from crashcheck.specs.model import Model

U64_MAX = (1 << 64) - 1
KINDS = ("trylock", "release")

Range = tuple[int, int]
State = tuple[Range, ...]
EMPTY: State = ()


@dataclass(frozen=True)
class Op:
    kind: str
    start: int
    end: int

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown range-lock operation {self.kind!r} (one of {', '.join(KINDS)})")
        if not (0 <= self.start <= self.end <= U64_MAX):
            raise ValueError(f"bad range [{self.start}, {self.end}]: need 0 <= S <= E <= 2^64-1")

    def text(self) -> str:
        return f"{self.kind} {self.start} {self.end}"


def parse_op(line: str) -> Op:
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(f"range-lock operation {line!r}: want `trylock S E` or `release S E`")
    return Op(parts[0], int(parts[1]), int(parts[2]))


def parse_output(line: str) -> str:
    out = line.strip()
    if out not in ("ok", "fail"):
        raise ValueError(f"range-lock output {line!r}: want `ok` or `fail`")
    return out


def overlapping(state: State, start: int, end: int) -> Range | None:
    """The held range overlapping [START, END], or None. Held ranges are disjoint and sorted, so
    only the last one starting at or before END can overlap."""
    i = bisect.bisect_right(state, (end, U64_MAX))
    if i > 0 and state[i - 1][1] >= start:
        return state[i - 1]
    return None


def _step(state: State, op: Op, spurious: bool) -> list[tuple[str, State]]:
    if op.kind == "trylock":
        if overlapping(state, op.start, op.end) is not None:
            return [("fail", state)]
        held = tuple(sorted(state + ((op.start, op.end),)))
        return [("ok", held), ("fail", state)] if spurious else [("ok", held)]
    rng = (op.start, op.end)
    if rng in state:
        return [("ok", tuple(r for r in state if r != rng))]
    return [("fail", state)]


def describe(state: State) -> str:
    return "held {" + ", ".join(f"[{s}, {e}]" for s, e in state) + "}"


def dump_state(dump: Sequence[Sequence[Any]]) -> State:
    """A dump of held ranges ([[S, E], ...], ints or decimal strings) as a state."""
    return tuple(sorted((int(s), int(e)) for s, e in dump))


def state_json(state: State) -> list[list[str]]:
    return [[str(s), str(e)] for s, e in state]


def followup(ops: Sequence[Op], **_: Any) -> list[Op]:
    """After recovery: try to lock and release each of the first four ranges of the history, then
    the whole universe (which must then be free)."""
    ranges: list[Range] = []
    for op in ops:
        if (op.start, op.end) not in ranges:
            ranges.append((op.start, op.end))
    out = []
    for s, e in ranges[:4]:
        out += [Op("trylock", s, e), Op("release", s, e)]
    return out + [Op("trylock", 0, U64_MAX), Op("release", 0, U64_MAX)]


# Endpoints that matter: both ends of the universe and their neighbours, and a few in between.
EDGES = (0, 1, 2, 3, 5, 8, 1 << 32, U64_MAX - 2, U64_MAX - 1, U64_MAX)


# Starts of short ranges [S, S] or [S, S+1] side by side: many trylocks succeed and the held
# nodes sit next to each other in the skip list, where a lock-free list's races are (one node
# linked right after another while the latter is released).
NEIGHBOURS = (1, 2, 3, 4, 5, 6, U64_MAX - 3, U64_MAX - 2, U64_MAX - 1)


def ranges(points: Sequence[int] = EDGES):
    """A Hypothesis strategy of ranges with endpoints from POINTS."""
    from hypothesis import strategies as st
    return st.tuples(st.sampled_from(points), st.sampled_from(points)).map(lambda p: (min(p), max(p)))


def short_ranges(starts: Sequence[int] = NEIGHBOURS):
    """A Hypothesis strategy of ranges of one or two points starting at STARTS."""
    from hypothesis import strategies as st
    return st.tuples(st.sampled_from(starts), st.integers(0, 1)).map(lambda p: (p[0], min(p[0] + p[1], U64_MAX)))


def histories(min_ops: int = 1, max_ops: int = 12, points: Sequence[int] = EDGES, **_: Any):
    """Operation lists: trylocks of drawn ranges, releases mostly of ranges tried before (so they
    succeed), sometimes of any range."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        n = draw(st.integers(min_ops, max_ops))
        tried: list[Range] = []
        ops = []
        for _ in range(n):
            if tried and draw(st.integers(0, 2)) == 0:
                s, e = draw(st.sampled_from(tried)) if draw(st.booleans()) else draw(ranges(points))
                ops.append(Op("release", s, e))
            else:
                rng = draw(ranges(points))
                tried.append(rng)
                ops.append(Op("trylock", *rng))
        return ops
    return build()


def thread_histories(threads: int, min_ops: int = 1, max_ops: int = 12, points: Sequence[int] = EDGES,
                     **_: Any):
    """(load, sections) for THREADS threads: no load phase; each thread's section has MIN_OPS to
    MAX_OPS operations of its own (so a thread has room for several lock/release rounds, where a
    race can hit: one round per thread made the scheduler meet a narrow window about once in 200
    runs). A thread trylocks drawn ranges and releases mostly a range it tried itself, after
    that trylock (the release must succeed unless the trylock failed), sometimes any range (a
    wrong release, which must fail unless it names a range another thread holds). Ranges come
    from POINTS, a small universe with both ends of uint64, so threads overlap often; or, drawn
    per history, they are short ranges side by side (`short_ranges`): most trylocks then succeed
    and several held nodes are neighbours in the list, which the races of linking next to a
    node being released need (over POINTS most ranges are wide and the list holds one or two)."""
    from hypothesis import strategies as st

    @st.composite
    def history(draw):
        drawn = ranges(points) if not draw(st.booleans()) else short_ranges()
        return [], draw(st.lists(section(drawn), min_size=threads, max_size=threads))

    @st.composite
    def section(draw, drawn):
        n = draw(st.integers(min_ops, max_ops))
        held: list[Range] = []
        ops = []
        for _ in range(n):
            kind = draw(st.integers(0, 5))      # 0-1: trylock, 2-4: release own, 5: release any
            if kind >= 2 and held and kind < 5:
                s, e = held.pop(draw(st.integers(0, len(held) - 1)))
                ops.append(Op("release", s, e))
            elif kind == 5:
                ops.append(Op("release", *draw(drawn)))
            else:
                rng = draw(drawn)
                held.append(rng)
                ops.append(Op("trylock", *rng))
        return ops

    return history()


def make(spurious: bool = False) -> Model:
    """The range-lock model; with SPURIOUS, trylock on a free range may also fail."""
    return Model(
        name="range_lock" + ("_spurious" if spurious else ""),
        init=lambda: EMPTY,
        step=lambda state, op: _step(state, op, spurious),
        parse_op=parse_op,
        op_text=Op.text,
        describe=describe,
        parse_output=parse_output,
        dump_state=dump_state,
        state_json=state_json,
        followup=followup,
        histories=histories,
        thread_histories=thread_histories,
        doc="range lock over inclusive uint64 ranges: trylock S E, release S E -> ok | fail",
    )


MODEL = make()
SPURIOUS = make(spurious=True)
