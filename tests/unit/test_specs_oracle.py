"""The reference model and the crash oracle: acceptance sets and bug classes on hand-made cases."""
import json

import pytest

from crashcheck.specs.ordered_map import Op, parse_op, prefix_states, run
from crashcheck.specs.oracle import HistoryPoint, acceptable, judge_recovery


def k(n):
    return n.to_bytes(8, "big")


def v(n):
    return n.to_bytes(8, "little")


def dump(*pairs):
    return [[k(a).hex(), v(b).hex()] for a, b in pairs]


def ok(d, followup=None):
    return {"status": "ok", "result": {"recovered": True, "recover_status": 0, "dump": d,
                                       "violations": [], "followup": followup or []}}


HISTORY = [parse_op(line) for line in
           ["insert 1 10", "insert 2 20", "update 1 11", "delete 2", "insert 3 30"]]


def test_model_results_match_driver_notation():
    state, out = run([parse_op(x) for x in ["insert 5 50", "insert 5 51", "lookup 5", "update 6 1",
                                             "insert 2 20", "scan 0 10", "delete 5", "lookup 5"]])
    assert out == ["ok", "exists", "value 50", "notfound", "ok", "scan 2 20 5 50", "ok", "notfound"]
    assert state == ((k(2), v(20)),)
    assert Op("scan", k(3), count=2).text() == "scan 3 2"


def test_acceptable_states_in_flight_and_between():
    states = prefix_states(HISTORY)
    assert acceptable(HISTORY, HistoryPoint(2, 2)) == [states[2], states[3]]
    assert acceptable(HISTORY, HistoryPoint(2, None)) == [states[2]]
    # an op that changes nothing (lookup) adds no second state
    ops = HISTORY + [parse_op("lookup 1")]
    assert len(acceptable(ops, HistoryPoint(5, 5))) == 1


@pytest.mark.parametrize("point, result, cls", [
    (HistoryPoint(3, 3), ok(dump((1, 11), (2, 20))), None),            # delete in flight: not applied
    (HistoryPoint(3, 3), ok(dump((1, 11))), None),                     # delete in flight: applied
    (HistoryPoint(4, None), ok(dump((1, 11), (2, 20))), "resurrected-delete"),
    (HistoryPoint(3, None), ok(dump((1, 10), (2, 20))), "lost-durable-write"),   # update lost
    (HistoryPoint(2, None), ok(dump((1, 10))), "lost-durable-write"),            # insert lost
    (HistoryPoint(2, None), ok(dump((1, 10), (2, 99))), "wrong-value"),
    (HistoryPoint(2, None), ok(dump((1, 10), (2, 20), (7, 70))), "wrong-value"),  # never inserted
    (HistoryPoint(2, None), {"status": "signal", "signal": 11, "result": None, "stderr": ""}, "recovery-crash"),
    (HistoryPoint(2, None), {"status": "timeout", "result": None}, "recovery-hang"),
    (HistoryPoint(2, None), {"status": "ok", "result": {"recovered": True, "dump": dump((1, 10), (2, 20)),
                                                      "violations": ["node 0x40: bad depth"]}},
     "invariant-violation"),
])
def test_classes(point, result, cls):
    verdict = judge_recovery(HISTORY, point, result)
    assert verdict.ok == (cls is None)
    assert verdict.cls == cls


def test_torn_wide_value():
    ops = [Op("insert", b"ab", b"A" * 16), Op("update", b"ab", b"B" * 16)]
    res = ok([[b"ab".hex(), (b"B" * 8 + b"A" * 8).hex()]])
    assert judge_recovery(ops, HistoryPoint(2, None), res).cls == "torn-update"


def test_post_recovery_divergence():
    follow = [parse_op("lookup 1"), parse_op("insert 9 90")]
    good = judge_recovery(HISTORY, HistoryPoint(2, None), ok(dump((1, 10), (2, 20)), ["value 10", "ok"]), follow)
    assert good.ok
    bad = judge_recovery(HISTORY, HistoryPoint(2, None), ok(dump((1, 10), (2, 20)), ["value 10", "exists"]), follow)
    assert bad.cls == "post-recovery-divergence" and "insert 9 90" in bad.detail


@pytest.mark.parametrize("result, cls, words", [
    ({"status": "timeout", "signal": 19, "result": None}, "recovery-hang", "stopped itself"),
    ({"status": "runner-died", "signal": None, "result": None}, "recovery-crash", "killed the checker"),
    ({"status": "ok", "exit": 0, "result": None, "output": ""}, "recovery-crash", "status 0 before"),
    ({"status": "ok", "exit": 0, "stray": True, "result": ok(dump((1, 10), (2, 20)))["result"]},
     "recovery-crash", "left a process running"),
])
def test_misbehaving_recovery(result, cls, words):
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), result)
    assert verdict.cls == cls and words in verdict.detail


def partial(d, done):
    """The check JSON as far as a check that died in its follow-up operations wrote it."""
    head = ('{"recovered": true, "recover_status": 0, "dump": ' + json.dumps(d)
            + ', "violations": [], "allocated": [], "unreachable": [], "followup": [')
    return head + ", ".join(json.dumps(x) for x in done)


@pytest.mark.parametrize("status, sig, group, words", [
    ("timeout", 9, "follow-up: insert: timeout", "did not finish within the time limit"),
    ("timeout", 19, "follow-up: insert: stopped", "stopped itself"),
    ("signal", 11, "follow-up: insert: SIGSEGV (signal 11)", "died of SIGSEGV (signal 11)"),
    ("runner-died", None, "follow-up: parent-killed", "killed the checker"),
])
def test_followup_operation_that_dies_after_a_good_recovery(status, sig, group, words):
    # the runner's answer for a check whose recovery went well and whose second follow-up
    # operation died: no result, the check JSON flushed up to the first follow-up output
    follow = [parse_op("lookup 1"), parse_op("insert 9 90"), parse_op("lookup 9")]
    res = {"status": status, "signal": sig, "exit": None, "result": None, "stderr": "",
           "output": partial(dump((1, 10), (2, 20)), ["value 10"])}
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), res, follow)
    # a post-recovery finding naming the operation that died, with what ran before it kept
    assert (verdict.cls, verdict.group) == ("post-recovery-divergence", group)
    assert "follow-up operation 1 `insert 9 90`" in verdict.detail and words in verdict.detail
    assert "returned `value 10`" in verdict.detail
    assert verdict.followup_outputs == ["value 10"]
    assert verdict.actual == verdict.matched            # recovery itself was fine
    # a follow-up output the model does not allow, before the death, is what is reported
    res["output"] = partial(dump((1, 10), (2, 20)), ["value 11"])
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), res, follow)
    assert verdict.cls == "post-recovery-divergence" and "returned `value 11`" in verdict.detail
    assert verdict.group == "" and verdict.followup_outputs == ["value 11"]
    # a wrong dump still comes first
    res["output"] = partial(dump((1, 10)), ["value 10"])
    assert judge_recovery(HISTORY, HistoryPoint(2, None), res, follow).cls == "lost-durable-write"
    # and output the check did not write that way is recovery's failure
    res["output"] = "garbage"
    assert judge_recovery(HISTORY, HistoryPoint(2, None), res, follow).cls.startswith("recovery-")


def test_rules_the_followup_broke_are_the_finding():
    """The check run again after the follow-up found broken rules: an invariant violation grouped
    by the rule (as one a run without crash breaks), naming the follow-up, and keeping a wrong
    follow-up answer in its detail; without them the same answers are a plain divergence."""
    follow = [parse_op("insert 9 90"), parse_op("lookup 9")]
    res = ok(dump((1, 10), (2, 20)), ["ok", "notfound"])
    assert judge_recovery(HISTORY, HistoryPoint(2, None), res, follow).cls == "post-recovery-divergence"
    res["result"]["followup_violations"] = ["leaf 0x6000 under key byte 7e at position 0: its key differs",
                                            "node 0x7000: count 3, children 2"]
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), res, follow)
    assert (verdict.ok, verdict.cls) == (False, "invariant-violation")
    assert verdict.group == "rule: leaf ? under key byte ? at position ?: its key differs"
    assert verdict.detail.startswith("after recovery and the follow-up `insert 9 90` and 1 more operations: "
                                     "leaf 0x6000 under key byte 7e at position 0: its key differs (+1 more)")
    assert "the follow-up also went wrong: after recovery, `lookup 9` returned `notfound`" in verdict.detail
    assert verdict.actual == verdict.matched            # recovery itself left an acceptable state
    # right answers, broken rules: still the broken rules
    res["result"]["followup"] = ["ok", "value 90"]
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), res, follow)
    assert verdict.cls == "invariant-violation" and "also went wrong" not in verdict.detail
    # a check that died after the follow-up's list: the follow-up is judged as far as it went
    res = {"status": "signal", "signal": 11, "exit": None, "result": None, "stderr": "",
           "output": partial(dump((1, 10), (2, 20)), ["ok", "notfound"]) + "]"}
    verdict = judge_recovery(HISTORY, HistoryPoint(2, None), res, follow)
    assert verdict.cls == "post-recovery-divergence" and "`lookup 9` returned `notfound`" in verdict.detail


# -- every finding gets the class that names its mistake ------------------------------------------

def test_tie_is_judged_against_the_state_the_crash_lost():
    """A re-insert in flight after a completed delete, its key back with a value nobody wrote:
    the dump is one change away from both acceptable states (before: the key is extra; after: its
    value differs). The crash lost the insert's value, not the delete: never resurrected-delete."""
    ops = [parse_op(x) for x in ["insert 1 10", "delete 1", "insert 1 30"]]
    verdict = judge_recovery(ops, HistoryPoint(2, 2), ok(dump((1, 99))))
    assert verdict.cls == "wrong-value", verdict.detail
    assert "expected" in verdict.detail and "never inserted" not in verdict.detail


def test_tie_of_a_lost_insert_value_is_not_never_inserted():
    ops = [parse_op("insert 1 10")]
    verdict = judge_recovery(ops, HistoryPoint(0, 0), ok(dump((1, 0))))
    assert verdict.cls == "wrong-value"
    assert "never inserted" not in verdict.detail and "expected" in verdict.detail, verdict.detail


def test_recovery_crash_says_how_the_process_died_and_what_it_printed():
    res = {"status": "signal", "signal": 11, "exit": None, "result": None,
           "stderr": "recover: slot 0\nrecover: slot 1\nrecover: chunk 7\n"}
    verdict = judge_recovery([parse_op("insert 1 10")], HistoryPoint(0, 0), res)
    assert verdict.cls == "recovery-crash"
    assert "SIGSEGV (signal 11)" in verdict.detail
    assert "recover: slot 1 | recover: chunk 7" in verdict.detail, verdict.detail
    res = {"status": "exit", "signal": None, "exit": 3, "result": None, "stderr": ""}
    assert "exited with status 3" in judge_recovery([parse_op("insert 1 10")], HistoryPoint(0, 0), res).detail


def test_violations_before_a_crashing_lookup_are_kept():
    """The check wrote a broken rule (trees/common/check.c, as it found it), then a lookup of a
    dumped key killed the process: the finding is the broken rule, and says how the check died."""
    res = {"status": "signal", "signal": 11, "exit": None, "result": None,
           "stderr": "check: violation: node at 0x6000001000 has a NULL child in slot 2\n"}
    verdict = judge_recovery([parse_op("insert 1 10")], HistoryPoint(0, 0), res)
    assert verdict.cls == "invariant-violation"
    assert verdict.detail.startswith("node at 0x6000001000 has a NULL child in slot 2; then the check died")
    assert verdict.group == "rule: node at ? has a NULL child in slot ?"


def test_address_free_folds_hex_key_bytes():
    # one broken rule of Heart's check, reported with different key bytes and positions, is one
    # group (before: "a?", "?a" and "ff" made three)
    from crashcheck.specs.oracle import address_free
    texts = ["leaf 0x600000020400 under key byte a3 at position 2: its key has another byte there",
             "leaf 0x600000020440 under key byte 1a at position 10: its key has another byte there",
             "leaf 0x600000020480 under key byte ff at position 4: its key has another byte there"]
    assert {address_free(t) for t in texts} == {"leaf ? under key byte ? at position ?: its key has another byte there"}
    assert address_free("N256 node, x:00c88b63") == "N? node, x:?"


def test_a_followup_answered_by_the_model_once_per_recovered_state(monkeypatch):
    """States of one crash point that recover to the same state share the model's answers to
    the follow-up (specs/oracle.py _replay_once): worked out once, and answers equal to them need
    no replay; answers that differ are replayed (which says where and how), and another
    follow-up list (another crash point's) or recovered state is worked out anew."""
    import dataclasses

    from crashcheck.specs import model as model_mod
    from crashcheck.specs.ordered_map import MODEL
    steps, replays = [], []
    counted = dataclasses.replace(MODEL, step=lambda state, op: steps.append(op) or MODEL.step(state, op),
                                  answers=None)   # stepped, so the steps can be counted
    real_replay = model_mod.replay
    monkeypatch.setattr(model_mod, "replay", lambda *a: replays.append(1) or real_replay(*a))
    sets = model_mod.prefix_states(MODEL, HISTORY)

    def judge(point, result, follow):
        return judge_recovery(HISTORY, point, result, follow, model=counted, sets=sets)
    follow = [parse_op("lookup 1"), parse_op("insert 9 90")]
    point = HistoryPoint(2, None)
    verdicts = [judge(point, ok(dump((1, 10), (2, 20)), ["value 10", "ok"]), follow).ok for _ in range(3)]
    assert verdicts == [True] * 3 and len(steps) == len(follow) and not replays
    bad = judge(point, ok(dump((1, 10), (2, 20)), ["value 10", "exists"]), follow)
    assert bad.cls == "post-recovery-divergence" and "insert 9 90" in bad.detail and len(replays) == 1
    # fewer answers than operations (a check that died in the follow-up): their prefix is judged
    assert judge(point, ok(dump((1, 10), (2, 20)), ["value 10"]), follow).cls == "post-recovery-divergence"
    assert len(replays) == 1
    # another list of the same operations (another crash point's), another recovered state (the
    # operation in flight applied): worked out again
    steps.clear()
    assert judge(point, ok(dump((1, 10), (2, 20)), ["value 10", "ok"]), list(follow)).ok
    flight = HistoryPoint(2, 2)        # `update 1 11` in flight: both states acceptable
    assert judge(flight, ok(dump((1, 11), (2, 20)), ["value 11", "ok"]), follow).ok
    assert len(steps) == 2 * len(follow) and len(replays) == 1


def test_the_maps_fast_answers_are_stepping_through_the_ops():
    """specs/ordered_map.py answers (the oracle's replay of a follow-up, on a working copy) gives
    what run gives, op by op, from empty and filled states, on random histories of every kind of
    operation (scans inside, across and past the ends, keys present and absent, a state with a
    key twice, which is no map's state, stepped as run steps it); the oracle replays with it."""
    import random

    from crashcheck.specs import oracle
    from crashcheck.specs.ordered_map import MODEL, answers
    rng = random.Random(51)
    for _ in range(300):
        state = run([Op("insert", k(rng.randrange(30)), v(rng.randrange(99))) for _ in range(rng.randrange(25))])[0]
        ops = [Op(kind, k(rng.randrange(30)), v(rng.randrange(99)) if kind in ("insert", "update") else b"",
                  rng.randrange(1, 12) if kind == "scan" else 0)
               for kind in rng.choices(["insert", "update", "delete", "lookup", "scan"], k=rng.randrange(60))]
        assert answers(state, ops) == run(ops, state)[1]
    twice = ((k(1), v(1)), (k(1), v(2)), (k(3), v(3)))
    ops = [parse_op(x) for x in ["lookup 1", "scan 0 9", "delete 1", "lookup 1", "scan 0 9"]]
    assert answers(twice, ops) == run(ops, twice)[1] == ["value 1", "scan 1 1 1 2 3 3", "ok", "value 2",
                                                         "scan 1 2 3 3"]
    with pytest.raises(ValueError):
        answers((), [Op("upsert", k(1))])
    assert MODEL.answers is answers
    assert oracle._model_answers(MODEL, ops, twice) == run(ops, twice)[1]
