"""A long history's repr stays short (issue 49 point 12): Hypothesis prints the repr of each failing
example it replays at a batch's end and warned "Generating overly large repr ... 30 kB" on stderr
in every run on a structure with long histories (a bulk load is hundreds of operations)."""
from __future__ import annotations

import warnings

from hypothesis import Phase, given, settings, strategies as st

from crashcheck.harness.check.threads import make_threaded
from crashcheck.specs.model import with_load
from crashcheck.specs.ordered_map import Op


def _op(i: int) -> Op:
    return Op("insert", i.to_bytes(8, "big"), b"\1" * 8)


@st.composite
def long_histories(draw):
    return with_load([_op(draw(st.integers(0, 255))) for _ in range(700)], 600)


def test_a_failing_long_history_is_replayed_without_a_repr_warning():
    @settings(max_examples=3, database=None, phases=[Phase.generate], report_multiple_bugs=True)
    @given(long_histories())
    def prop(ops):
        raise ValueError("a bug")

    with warnings.catch_warnings():
        warnings.simplefilter("error")          # (the HypothesisWarning, as an error)
        try:
            prop()
        except ValueError as exc:
            notes = "\n".join(getattr(exc, "__notes__", []))
    assert "ops=Workload([" in notes and "(697 more)], load=600, ops=700)" in notes
    assert len(notes) < 2000


def test_reprs_are_short_and_say_what_they_hold():
    w = with_load([_op(i) for i in range(5000)], 10)
    assert len(repr(w)) < 500 and repr(w).endswith("(4997 more)], load=10, ops=5000)")
    t = make_threaded([_op(1)] * 300, [[_op(2)] * 300, [_op(3)] * 300], "random:1")
    assert len(repr(t)) < 500 and repr(t).startswith("Threaded([")
