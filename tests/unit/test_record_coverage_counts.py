"""A record's counts of crash states are as large as the states fuzz explores: 2^72 states at one
crash point is what a structure with a few wide pending lines gives, and a lazy execution that hangs
counts every state of its class, and a program finding occurs once per failing state (found by the
self-fuzz, tests/selffuzz: `crashcheck report` refused the results file `fuzz` or `run` had just
written, and `replay` the record, at `coverage.explored`, `hung.history_states` and `occurrences`)."""
import pytest

from crashcheck.harness.core.schema import SchemaError
from crashcheck.harness.triage.record_formats import COVERAGE, HUNG, RECORD, SYMPTOM

COUNTS = pytest.mark.parametrize("count", [2 ** 63, 2 ** 72, 2 ** 1100], ids=["2^63", "2^72", "2^1100"])


@COUNTS
def test_coverage_takes_counts_past_63_bits(count):
    assert COVERAGE.check({"legal": count, "explored": count, "exhaustive": True}, "bugs[0].coverage")["explored"] == count


@COUNTS
def test_a_hang_takes_counts_past_63_bits(count):
    hung = HUNG.check({"states": count, "explored": count, "full": 2, "history_states": count}, "bugs[0].hung")
    assert hung["states"] == hung["explored"] == hung["history_states"] == count


@COUNTS
def test_a_bug_occurs_any_number_of_times(count):
    spec, _ = RECORD.fields["occurrences"]
    assert spec.check(count, "occurrences") == count
    assert SYMPTOM.check({"class": "leak", "occurrences": count}, "symptoms[0]")["occurrences"] == count


def test_counts_still_refuse_what_is_no_count():
    with pytest.raises(SchemaError, match="explored"):
        COVERAGE.check({"legal": 4, "explored": -1}, "bugs[0].coverage")
    with pytest.raises(SchemaError, match="history_states"):
        HUNG.check({"states": 1, "history_states": "many"}, "bugs[0].hung")
