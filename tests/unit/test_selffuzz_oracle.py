"""The self-fuzz's oracle (tests/selffuzz/oracle.py) on outcomes made by hand: each promise it
checks turns the verdict, and a clean run passes. The generator's knobs are a pure function of the
seed (a reproducer is a seed)."""
from pathlib import Path

import pytest

from selffuzz.oracle import FLOOD_BYTES, Outcome, judge
from selffuzz.params import FAMILY, draw, family_of

TRACEBACK = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nKeyError: 1\n'


def outcome(sub="fuzz", status=0, stderr="", stdout="", **kw) -> Outcome:
    return Outcome(seed=1, sub=sub, argv=["crashcheck", sub], status=status, elapsed=1.0, deadline=50.0,
                   stdout=stdout, stderr=stderr, out_bytes=len(stdout) + len(stderr), **kw)


def results(tmp_path: Path, text='{"crashcheck": 1, "bugs": []}') -> Path:
    path = tmp_path / "r.json"
    path.write_text(text)
    return path


def test_a_clean_run_passes(tmp_path):
    assert judge(outcome(status=1, results=results(tmp_path))) == ("ok", "")


@pytest.mark.parametrize("where", ["stdout", "stderr"])
def test_a_traceback_anywhere_is_an_internal_error(where):
    assert judge(outcome(**{where: TRACEBACK}))[0] == "internal"


def test_the_targets_own_traceback_like_noise_is_not_ours():
    assert judge(outcome(stdout="Traceback (most recent call last): not ours\nok\n")) == ("ok", "")


def test_internal_error_line_and_exception_groups():
    assert judge(outcome(status=2, stderr="crashcheck: internal error (above); ...\n"))[0] == "internal"
    assert judge(outcome(status=1, stderr="  | BaseExceptionGroup: Hypothesis found 2 distinct failures\n"))[0] == "internal"


def test_internal_error_says_when_the_results_are_missing_too(tmp_path):
    verdict, reason = judge(outcome(status=2, stderr="crashcheck: internal error: x\n", results=tmp_path / "none.json"))
    assert verdict == "internal" and "no results file" in reason


def test_deadline_signal_and_unknown_status():
    assert judge(outcome(status=None)) == ("oracle", "did not end within 50 s (killed)")
    assert judge(outcome(status=-9))[1] == "died of signal 9"
    assert judge(outcome(status=3))[1] == "exit status 3"
    assert judge(outcome(sub="replay", status=3, replay_class="nondeterminism"))[0] == "ok"


def test_exit_2_needs_exactly_one_error_line():
    assert judge(outcome(status=2, stderr="crashcheck: error: no such trace file\n")) == ("ok", "")
    assert judge(outcome(status=2, stderr="something broke\n"))[0] == "oracle"
    assert judge(outcome(status=2, stderr="crashcheck: error: a\ncrashcheck: error: b\n"))[0] == "oracle"


def test_a_run_that_ended_writes_its_results(tmp_path):
    assert judge(outcome(status=0, results=tmp_path / "none.json"))[1] == "no results file none.json"
    assert "not JSON" in judge(outcome(status=1, results=results(tmp_path, "{")))[1]
    assert "no format field" in judge(outcome(status=1, results=results(tmp_path, "{}")))[1]


def test_a_legal_input_must_pass():
    assert judge(outcome(sub="build", status=2, stderr="crashcheck: error: linking failed\n", expect_ok=True))[0] == "oracle"


def test_replay_says_fixed_only_when_something_changed():
    verdict, reason = judge(outcome(sub="replay", status=0, replay_class="checker-failure", nondeterministic=True))
    assert verdict == "oracle" and "nondeterministic" in reason
    assert judge(outcome(sub="replay", status=0, replay_class="lost-durable-write"))[0] == "oracle"
    assert judge(outcome(sub="replay", status=0, replay_class="operation-hang")) == ("ok", "")   # timing
    assert judge(outcome(sub="replay", status=0, replay_class="nondeterminism", nondeterministic=True))[0] == "oracle"
    assert judge(outcome(sub="replay", status=1, replay_class="lost-durable-write")) == ("ok", "")


def test_a_record_of_a_deterministic_target_replays():
    cannot = "crashcheck: error: the record does not replay as recorded\n"
    assert judge(outcome(sub="replay", status=2, stderr=cannot, replay_class="leak"))[0] == "oracle"
    assert judge(outcome(sub="replay", status=2, stderr=cannot, replay_class="leak", nondeterministic=True)) == ("ok", "")


def test_a_flood_is_a_failure_except_where_printing_is_the_job():
    big = "x" * (FLOOD_BYTES + 1)
    assert judge(outcome(stdout=big))[0] == "oracle"
    assert judge(outcome(sub="trace show", stdout=big, flood_ok=True)) == ("ok", "")


def test_targets_are_a_function_of_their_seed():
    assert draw(123) == draw(123)
    assert all(draw(s).kind == draw(family_of(s)[0]).kind for s in range(0, 4 * FAMILY))
    assert {draw(s).kind for s in range(200)} == {"structure", "program"}
