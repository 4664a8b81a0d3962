"""The operation count of threaded histories, adapting to the structure lane by lane.

Owns `LaneOps`: each lane's longest history (harness/run/config.py lanes: what a batch does
depends only on its lane's earlier batches, so --jobs changes nothing) and the strategy that
draws such histories. A threaded run at the default --max-ops starts every lane there; a batch
whose clean runs showed the threads meeting on no new (load site, store site) pair (a load of a
PM word another thread stored later: harness/check/aims.py) grows its lane's longest history by
half, up to CAP times the default. Where threads meet on a few words at once (a lock-free trie's
root, a lock's word) the pairs are all seen within a batch or two; longer sections then reach
the meetings that need a node to fill, split or empty first, or a freed object to be reused.
A structure whose clean runs show no pair at all (its loads not logged, no PM) has no signal and
keeps the default, as does a run with --max-ops given, or one thread.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

from crashcheck.harness.run.config import Config

CAP = 3          # a lane's longest history grows to at most this many times the default


class LaneOps:
    """Each lane's longest history, and the strategies drawing them (BUILD makes one of a config),
    each built once, when a lane first needs it."""

    def __init__(self, config: Config, build: Callable[[Config], object]) -> None:
        self.config = config
        self.ops: dict[int, int] = {}                    # lane -> its longest history, once grown
        self.by_ops: dict[int, object] = {}
        self.build = build

    def strategy(self, lane: int):
        """LANE's histories."""
        ops = self.ops.get(lane, self.config.max_ops)
        if ops not in self.by_ops:
            self.by_ops[ops] = self.build(replace(self.config, max_ops=ops))
        return self.by_ops[ops]

    def adapt(self, lane: int, seen_before: int, seen_after: int) -> int:
        """After a batch of LANE whose clean runs had shown SEEN_BEFORE distinct pairs and then
        SEEN_AFTER: grow the lane's longest history if the batch met on nothing new. Returns the
        lane's longest history now (0 when it never adapts)."""
        c = self.config
        if not (c.adaptive_ops and c.threads > 1):
            return 0
        ops = self.ops.get(lane, c.max_ops)
        if seen_after > 0 and seen_after == seen_before:
            ops = min(ops + max(1, ops // 2), CAP * c.max_ops)
            self.ops[lane] = ops
        return ops
