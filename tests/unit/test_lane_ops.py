"""The operation count of threaded histories adapting lane by lane (harness/run/lane_ops.py)."""
from __future__ import annotations

from crashcheck.harness.run.config import Config
from crashcheck.harness.run.lane_ops import CAP, LaneOps


def _lanes(**config):
    built = []
    lanes = LaneOps(Config(**{"max_ops": 10, "threads": 3, **config}),
                    lambda c: built.append(c.max_ops) or ("default" if c.max_ops == 10 else f"max {c.max_ops}"))
    return lanes, built


def test_a_batch_that_meets_on_nothing_new_grows_its_lane():
    lanes, built = _lanes()
    assert lanes.adapt(0, 0, 7) == 10            # new pairs: stays
    assert lanes.adapt(0, 7, 7) == 15            # nothing new: half again
    assert lanes.adapt(0, 7, 9) == 15
    assert lanes.strategy(0) == "max 15" and lanes.strategy(1) == "default"   # lane 1 untouched
    for _ in range(10):
        top = lanes.adapt(0, 9, 9)
    assert top == CAP * 10 and lanes.strategy(0) == f"max {CAP * 10}"
    lanes.strategy(0)
    assert built == [15, 10, CAP * 10]            # each strategy built once, when first needed


def test_no_signal_no_threads_or_a_given_max_ops_never_adapt():
    for config, seen in ((dict(), 0), (dict(threads=1), 5), (dict(adaptive_ops=False), 5)):
        lanes, built = _lanes(**config)
        assert [lanes.adapt(0, seen, seen) for _ in range(3)] in ([10, 10, 10], [0, 0, 0])
        assert lanes.strategy(0) == "default" and built == [10]
