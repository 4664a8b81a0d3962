"""harness/core/collector.py: the crashcheck command raises the collector's young threshold (issue 51)."""
from __future__ import annotations

import gc

import pytest

from crashcheck.harness.core import collector


@pytest.fixture(autouse=True)
def _thresholds():
    saved = gc.get_threshold()
    yield
    gc.set_threshold(*saved)


@pytest.mark.parametrize("before, after", [
    ((700, 10, 10), (collector.YOUNG, 10, 10)),          # CPython's default: raised, older kept
    ((700, 3, 7), (collector.YOUNG, 3, 7)),
    ((10 * collector.YOUNG, 10, 10), (10 * collector.YOUNG, 10, 10)),   # a higher one is kept
    ((0, 10, 10), (0, 10, 10)),                          # collection turned off stays off
])
def test_tune_raises_only_a_lower_young_threshold(before, after):
    gc.set_threshold(*before)
    collector.tune()
    assert gc.get_threshold() == after


def test_the_crashcheck_command_tunes_the_collector(tmp_path):
    from crashcheck.harness.cli.main import main
    gc.set_threshold(700, 10, 10)
    assert main(["replay", str(tmp_path / "missing.json")]) == 2      # any command, even a failing one
    assert gc.get_threshold()[0] == collector.YOUNG
