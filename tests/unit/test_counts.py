"""Counts for people (harness/core/counts.py): exact up to 10^12, then mantissa and exponent, for
integers past what a float holds (a point with a thousand pending pieces has ~10^301 states)."""
from crashcheck.harness.core.counts import big


def test_small_counts_are_exact_and_large_ones_short():
    assert big(0) == "0" and big(999_999_999_999) == "999,999,999,999"
    assert big(10 ** 12) == "1.00e+12"
    assert big("20048342967769524011888846878418715116549638579018109330795673112187743851629817058300897") == "2.00e+88"


def test_counts_past_a_float_do_not_overflow():
    assert big(10 ** 400) == "1.00e+400"
    assert big(3 * 10 ** 308 + 7) == "3.00e+308"
