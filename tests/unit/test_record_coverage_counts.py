"""A record's coverage counts as large as the crash states fuzz explores: 2^72 states explored at one
crash point is what a structure with a few wide pending lines gives (found by the self-fuzz,
tests/selffuzz: `crashcheck report` refused the results file `fuzz` had just written)."""
import pytest

from crashcheck.harness.core.schema import SchemaError
from crashcheck.harness.triage.record_formats import COVERAGE


@pytest.mark.parametrize("count", [2 ** 63, 2 ** 72, 2 ** 1100], ids=["2^63", "2^72", "2^1100"])
def test_coverage_takes_counts_past_63_bits(count):
    assert COVERAGE.check({"legal": count, "explored": count, "exhaustive": True}, "bugs[0].coverage")["explored"] == count


def test_coverage_still_refuses_what_is_no_count():
    with pytest.raises(SchemaError, match="explored"):
        COVERAGE.check({"legal": 4, "explored": -1}, "bugs[0].coverage")
