"""Program mode's memory of what the commands read: the reads of every image judged under
`--strategy lazy`, which the search replays when a later crash state has an image judged before.

Owns their bound. Two runs that read the same accesses share one copy (a libpmemobj checker reads
the pool's metadata the same way whatever the crash kept), and all of them together hold at most
a budget of bytes (CRASHCHECK_READS_CACHE_MB, defaults.READS_CACHE_MB): past it the least recently
used image's reads are dropped, its verdict kept. A search that needs dropped reads judges the
image again (program_explore.run), which the commands answer as before. Unbounded, the reads held
17 GB at pmem/pmdk#5461's 2,100-operation transaction (a 15,000-access log for each of thousands of
images); a verdict alone is a few hundred bytes.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Hashable

from crashcheck.harness.check.program_reads import Reads

DROPPED = "dropped"     # a verdict's reads were dropped by the bound (not None: None is "not trusted")


class ReadsCache:
    """The reads kept for the lazy search, at most BUDGET bytes of accesses."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.size = 0                                          # bytes of distinct packed logs held
        self.dropped = 0                                       # images whose reads were dropped
        self._shared: dict[bytes, list] = {}                   # packed log -> [the one copy, users]
        self._order: OrderedDict[Hashable, list[Reads]] = OrderedDict()   # least recently used first

    def keep(self, key: Hashable, reads: list[Reads] | None, verdicts: dict) -> list[Reads] | None:
        """READS (one image's, KEY's) as kept: a log equal to one already held is that copy. The
        oldest kept reads past the budget are dropped: their entry of VERDICTS becomes (verdict,
        DROPPED)."""
        if reads is None:
            return None
        old = self._order.pop(key, None)
        if old is not None:
            self._release(old)
        kept = []
        for r in reads:
            entry = self._shared.get(r.packed)
            if entry is None:
                entry = self._shared[r.packed] = [r.packed, 0]
                self.size += len(r.packed)
            entry[1] += 1
            kept.append(Reads(entry[0], r.why))
        self._order[key] = kept
        while self.size > self.budget and len(self._order) > 1:
            oldest, gone = self._order.popitem(last=False)
            self._release(gone)
            self.dropped += 1
            if oldest in verdicts:
                verdicts[oldest] = (verdicts[oldest][0], DROPPED)
        return kept

    def touch(self, key: Hashable) -> None:
        """KEY's reads were used: the last to be dropped."""
        if key in self._order:
            self._order.move_to_end(key)

    def _release(self, reads: list[Reads]) -> None:
        for r in reads:
            entry = self._shared[r.packed]
            entry[1] -= 1
            if not entry[1]:
                del self._shared[r.packed]
                self.size -= len(r.packed)


__all__ = ["DROPPED", "ReadsCache"]
