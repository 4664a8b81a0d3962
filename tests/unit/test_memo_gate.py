"""crashcheck.crashsim.lazy.MemoGate: each ReadMemo lookup gets a trial and stays on only while it pays
(the memo's logged states cost lazy a round trip per crash point; where nothing is reused, as on
Heart under x86-ADR, that made lazy about 3x slower than without the memo)."""
from crashcheck.crashsim.lazy import MemoGate


def feed(count, n: int, hits_every: int | None) -> None:
    for i in range(n):
        count(hits_every is not None and i % hits_every == 0)


def test_state_lookups_stop_after_a_trial_that_rarely_hits():
    gate = MemoGate()
    feed(gate.count_state, MemoGate.STATE_TRIAL - 1, None)
    assert gate.states                       # no verdict before the trial ends
    gate.count_state(False)
    assert not gate.states and gate.points and gate.keeps
    gate.count_state(True)                   # once off, off for the exploration
    assert not gate.states


def test_lookups_that_pay_stay_on():
    gate = MemoGate()
    feed(gate.count_state, 10 * MemoGate.STATE_TRIAL, 5)       # 20% answered
    feed(gate.count_point, 10 * MemoGate.POINT_TRIAL, 10)      # 10% answered
    assert gate.states and gate.points


def test_point_lookups_have_their_own_trial_and_answers_are_kept_while_either_pays():
    gate = MemoGate()
    feed(gate.count_point, MemoGate.POINT_TRIAL, None)
    assert not gate.points and gate.states and gate.keeps
    feed(gate.count_state, MemoGate.STATE_TRIAL, 20)           # 5%: under the share
    assert not gate.states and not gate.keeps


def test_always_never_turns_a_lookup_off():
    gate = MemoGate(always=True)
    feed(gate.count_state, 4 * MemoGate.STATE_TRIAL, None)
    feed(gate.count_point, 4 * MemoGate.POINT_TRIAL, None)
    assert gate.states and gate.points and gate.keeps
