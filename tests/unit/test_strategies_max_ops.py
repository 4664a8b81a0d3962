"""`--max-ops N` bounds the checked part of every history in every mix (harness/run/strategies.py):
the load phase (bulk inserts) is set-up, the operations after it are at most N."""
import pytest
from hypothesis import HealthCheck, given, settings

from crashcheck.harness.run.strategies import KEY_DISTRIBUTIONS, MIXES, histories


@pytest.mark.parametrize("max_ops", [1, 3])
@pytest.mark.parametrize("mix", MIXES)
def test_max_ops_bounds_the_checked_part(mix, max_ops):
    seen = set()

    @settings(max_examples=25, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(histories(mix=mix, max_ops=max_ops))
    def check(h):
        checked = len(h) - h.load
        assert 1 <= checked <= max_ops, (mix, [op.text() for op in h], h.load)
        assert all(op.kind == "insert" for op in h[:h.load])
        seen.add(h.load > 0)
    check()
    assert seen == {False, True}, "both plain and bulk-loaded histories are drawn"


def test_churn_still_grows_and_shrinks():
    """With room for it, a churn history inserts its keys and deletes every one of them."""
    @settings(max_examples=30, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(histories(mix="churn", keys=KEY_DISTRIBUTIONS[0], max_ops=16))
    def check(h):
        checked = h[h.load:]
        if h.load == 0:
            ins = [op.key for op in checked if op.kind == "insert"]
            assert sorted(ins) == sorted(op.key for op in checked if op.kind == "delete")
    check()
