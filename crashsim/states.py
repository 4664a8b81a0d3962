"""Crash states at one crash point: strategies that choose them, and the codec that turns a choice
into a fingerprint and runner writes.

Owns: which states get explored. A state is a choice vector: for each pending unit of the crash
point (crashcheck.crashsim.simulate.Unit), how many of its pending pieces persisted (0..n; for a unit with
a memset's unordered pieces, which of its Unit.orders).

Strategies
  exhaustive  every legal state, in mixed-radix order (first unit varies slowest).
  bounded     (default) exhaustive while the crash point has at most `limit` legal states; else a
              deterministic selection seeded by (seed, crash point index):
                1. the boundary states, always (even beyond the limit): nothing pending persisted;
                   everything persisted; each unit alone held back at its guarantee while the rest
                   persisted; each unit alone let through while the rest were held back;
                2. while under the limit: each unit alone at each intermediate prefix length while
                   the rest persisted (torn multi-store updates inside one line);
                3. random states up to the limit.
"""
from __future__ import annotations

import itertools
import random
from typing import Callable, Iterable, Iterator, Sequence

from .image import FP_MOD, ImageState, encode_writes
from .simulate import CrashPoint

STRATEGIES = ("exhaustive", "bounded", "lazy")   # lazy: crashcheck.crashsim.lazy, driven by crashcheck.crashsim.explore
DEFAULT_LIMIT = 64          # bounded: states per crash point (the one default; harness/core/defaults.py reads it)

Choice = tuple[int, ...]


def exhaustive(radices: Sequence[int]) -> Iterator[Choice]:
    """Every choice vector for units with RADICES pending pieces each."""
    return itertools.product(*(range(m + 1) for m in radices))


def legal_count(radices: Sequence[int]) -> int:
    n = 1
    for m in radices:
        n *= m + 1
    return n


def boundary(radices: Sequence[int]) -> list[Choice]:
    """The boundary states of the bounded strategy, without repeats, in a fixed order."""
    none = tuple(0 for _ in radices)
    full = tuple(radices)
    out = {none: None, full: None}
    for j, m in enumerate(radices):
        if m:
            out.setdefault(full[:j] + (0,) + full[j + 1:], None)
            out.setdefault(none[:j] + (m,) + none[j + 1:], None)
    return list(out)


STOP_EVERY = 1024    # random picks between two polls of a selection's STOP


def bounded(radices: Sequence[int], limit: int, rng: random.Random,
            stop: Callable[[], bool] | None = None) -> list[Choice]:
    """The bounded strategy's selection for one crash point (see the module note). STOP is
    polled every STOP_EVERY random picks: once it returns True the selection ends with the states
    chosen so far (the boundary states first), which the caller, polling it too, does not explore
    (a large limit is seconds of picks: a budget must not wait for them)."""
    if legal_count(radices) <= limit:
        return list(exhaustive(radices))
    chosen = dict.fromkeys(boundary(radices))
    full = tuple(radices)
    for j, m in enumerate(radices):
        for k in range(1, m):
            if len(chosen) >= limit:
                break
            chosen.setdefault(full[:j] + (k,) + full[j + 1:], None)
    # Random fill. The space is larger than the limit, so distinct picks exist; cap the attempts
    # so a space only slightly larger than the limit cannot make this loop long.
    attempts = 0
    while len(chosen) < limit and attempts < 20 * limit:
        attempts += 1
        if stop is not None and attempts % STOP_EVERY == 0 and stop():
            break
        chosen.setdefault(tuple(rng.randint(0, m) for m in radices), None)
    return list(chosen)


def select(cp: CrashPoint, strategy: str = "bounded", limit: int = DEFAULT_LIMIT,
           seed: int = 0, stop: Callable[[], bool] | None = None) -> Iterable[Choice]:
    """The states STRATEGY explores at crash point CP (a bounded sample cut short once STOP
    returns True: bounded)."""
    radices = cp.radices
    if strategy == "exhaustive":
        return exhaustive(radices)
    if strategy == "bounded":
        if limit < 1:
            raise ValueError(f"the state limit must be at least 1, not {limit}")
        if legal_count(radices) <= limit:     # what bounded() returns, without seeding a Random
            return list(exhaustive(radices))  # (most crash points; a string seed costs microseconds)
        return bounded(radices, limit, random.Random(f"{seed}:{cp.index}"), stop)
    if strategy == "lazy":
        raise ValueError("the lazy strategy chooses states by running recovery: use "
                         "crashcheck.crashsim.explore with a runner")
    raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")


def explored_count(cp: CrashPoint, strategy: str = "bounded", limit: int = DEFAULT_LIMIT,
                   seed: int = 0) -> int:
    """How many states STRATEGY explores at CP, without listing exhaustive ones."""
    if strategy == "exhaustive" or cp.legal <= limit:
        return cp.legal
    return len(bounded(cp.radices, limit, random.Random(f"{seed}:{cp.index}")))


def unit_groups(cp: CrashPoint) -> list[tuple[int, ...]]:
    """CP's units in groups that may touch the same bytes: one group per cache line (its cached
    unit and its NT units), and all eADR thread units (line None) together."""
    by_line: dict[object, list[int]] = {}
    for j, u in enumerate(cp.units):
        by_line.setdefault(u.line if u.line is not None else "threads", []).append(j)
    return [tuple(idxs) for idxs in by_line.values()]


class StateCodec:
    """Fingerprints and runner writes of the states of one crash point.

    Units of different lines touch disjoint slots, so a state's effect is the sum of independent
    per-unit effects, each computed once per prefix length and memoised. Units of one line (the
    line's cached pieces and its NT pieces) may touch the same slots, so they are encoded together,
    keyed by their joint choice. Valid only while the image is at CP's guaranteed state.
    """

    def __init__(self, cp: CrashPoint, image: ImageState) -> None:
        self.cp = cp
        self.image = image
        self.base_fp = cp.fp
        self._singles: list[tuple[int, dict[int, tuple[int, bytes]]]] = []
        self._groups: list[tuple[tuple[int, ...], dict[tuple[int, ...], tuple[int, bytes]]]] = []
        for idxs in unit_groups(cp):
            if len(idxs) == 1:
                self._singles.append((idxs[0], {}))
            else:
                self._groups.append((idxs, {}))

    def _effect(self, idxs: Sequence[int], ks: Sequence[int]) -> tuple[int, bytes]:
        units = self.cp.units
        if len(idxs) == 1:   # one unit's kept pieces are already in trace order
            kept = units[idxs[0]].kept(ks[0])
        else:
            kept = [p for j, k in zip(idxs, ks) for p in units[j].kept(k)]
            kept.sort(key=lambda p: p.id)
        delta, writes = self.image.overlay(kept)
        return delta, encode_writes(writes)

    def encode(self, choice: Choice) -> tuple[int, bytes]:
        """(fingerprint of the state's image, its writes over the base in wire format)."""
        fp = self.base_fp
        parts = []
        for j, memo in self._singles:
            k = choice[j]
            eff = memo.get(k)
            if eff is None:
                eff = memo[k] = self._effect((j,), (k,))
            fp += eff[0]
            if eff[1]:
                parts.append(eff[1])
        for idxs, memo in self._groups:
            ks = tuple(choice[j] for j in idxs)
            eff = memo.get(ks)
            if eff is None:
                eff = memo[ks] = self._effect(idxs, ks)
            fp += eff[0]
            if eff[1]:
                parts.append(eff[1])
        return fp % FP_MOD, b"".join(parts)
