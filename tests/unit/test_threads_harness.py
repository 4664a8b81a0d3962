"""Threaded histories on the Python side (harness/check/threads.py), without any driver: the history
text, the History rebuilt from `!call` / `!ret` lines, the crash-free verdict (linearizable,
illegal, not checked) and the scheduler's findings."""
from __future__ import annotations

from hypothesis import given, settings, strategies as st

from crashcheck.harness.check import threads
from crashcheck.harness.check.session import history_text
from crashcheck.specs import registry
from crashcheck.specs.model import with_load

MAP = registry.get("ordered_map")


def op(text: str):
    return MAP.parse_op(text)


def two_inserts():
    """load: insert 1 10; thread 1: insert 3 30; thread 2: insert 3 31, lookup 1."""
    return threads.make_threaded([op("insert 1 10")], [[op("insert 3 30")], [op("insert 3 31"), op("lookup 1")]],
                                 "random:7")


def test_history_text_has_thread_sections_and_parses_back():
    h = two_inserts()
    text = history_text(MAP, h)
    assert text == "insert 1 10\nthread 1\ninsert 3 30\nthread 2\ninsert 3 31\nlookup 1\n"
    assert h.load == 1 and h.thread_of == (0, 1, 2, 2) and h.nthreads == 2
    back = threads.parse_text(MAP, text, "random:7")
    assert list(back) == list(h) and back.thread_of == h.thread_of and back.load == 1


def test_plain_history_text_is_unchanged():
    assert history_text(MAP, with_load([op("insert 1 2"), op("lookup 1")], 1)) == "insert 1 2\nlookup 1\n"


def test_is_threaded_tells_the_history_kinds_apart():
    # the one question every step asks: a history with thread sections, or one thread
    plain = [op("insert 1 2"), op("lookup 1")]
    assert threads.is_threaded(two_inserts())
    assert threads.is_threaded(threads.parse_text(MAP, "thread 1\nlookup 5\n"))
    assert not threads.is_threaded(plain)
    assert not threads.is_threaded(with_load(plain, 1))
    assert not threads.is_threaded(threads.parse_text(MAP, "insert 1 2\nlookup 1\n"))
    assert not threads.is_threaded(threads.make_threaded(plain, [], "random:0"))   # no section: one thread


def test_empty_sections_keep_their_numbers():
    h = threads.make_threaded([], [[], [op("lookup 5")]], "random:0")
    assert history_text(MAP, h) == "thread 1\nthread 2\nlookup 5\n"
    assert h.section(1) == [] and h.section(2) == [op("lookup 5")]


def lines_for(rets: dict[int, str], order: list[str]) -> list[str]:
    """Result lines: !ready, the load result, then ORDER (c2 = call of op 2, r2 = its return)."""
    out = ["!ready", "ok"]
    thread_of = {1: 1, 2: 2, 3: 2}
    for ev in order:
        i = int(ev[1:])
        out.append(f"!call {thread_of[i]} {i}" if ev[0] == "c" else f"!ret {thread_of[i]} {i} {rets[i]}")
    return out + ["!end 4"]


def test_build_history_positions_follow_the_lines():
    h = two_inserts()
    lines = lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c1", "c2", "r1", "r2", "c3", "r3"])
    hist = threads.build_history(MAP, h, lines)
    assert [(o.thread, o.call, o.ret, o.output) for o in hist] == [
        (0, 0, 1, MAP.parse_output("ok")), (1, 2, 4, MAP.parse_output("ok")),
        (2, 3, 5, MAP.parse_output("exists")), (2, 6, 7, MAP.parse_output("value 10"))]


def test_judge_linearizable_overlapping_inserts():
    findings, checked = threads.judge(MAP, two_inserts(),
                                      lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c1", "c2", "r2", "r1", "c3", "r3"]))
    assert findings == [] and checked


def test_judge_two_ok_inserts_of_one_key_is_a_violation():
    findings, checked = threads.judge(MAP, two_inserts(),
                                      lines_for({1: "ok", 2: "ok", 3: "value 10"}, ["c1", "c2", "r1", "r2", "c3", "r3"]))
    assert checked and [f.cls for f in findings] == ["linearizability-violation"]
    assert findings[0].group == ("linearizability-violation", "results")
    assert "random:7" in findings[0].detail and "cannot be linearized" in findings[0].detail


def test_judge_real_time_order_matters():
    # insert 3 31 returned `exists` before insert 3 30 was even called: no linearization explains it
    findings, _ = threads.judge(MAP, two_inserts(),
                                lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c2", "r2", "c1", "c3", "r1", "r3"]))
    assert [f.cls for f in findings] == ["linearizability-violation"]


def test_judge_a_wrong_result_with_no_overlap_is_a_wrong_value():
    # the same results, but every operation returned before the next was called: no interleaving
    # is to blame, so it reads as a single-threaded run's wrong value, named by the operation
    findings, checked = threads.judge(MAP, two_inserts(),
                                      lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c2", "r2", "c1", "r1", "c3", "r3"]))
    assert checked and [(f.cls, f.group) for f in findings] == [("wrong-value", ("no-crash", "insert: exists for ok"))]
    assert "`insert 3 31` (thread 2, operation 2) returned `exists`, the model `ok`" in findings[0].detail
    # overlapping by one step: a linearizability violation again (see the test above)
    assert threads.judge(MAP, two_inserts(), lines_for({1: "ok", 2: "exists", 3: "value 10"},
                                                       ["c2", "r2", "c1", "c3", "r1", "r3"]))[0][0].cls \
        == "linearizability-violation"


def test_one_at_a_time_orders_a_sequential_history_only():
    h = threads.build_history(MAP, two_inserts(), lines_for({1: "ok", 2: "exists", 3: "value 10"},
                                                            ["c2", "r2", "c1", "r1", "c3", "r3"]))
    assert [o.id for o in h.one_at_a_time()] == [0, 2, 1, 3]
    overlapping = threads.build_history(MAP, two_inserts(), lines_for({1: "ok", 2: "exists", 3: "value 10"},
                                                                      ["c1", "c2", "r2", "r1", "c3", "r3"]))
    assert overlapping.one_at_a_time() is None


def test_judge_out_of_budget_is_not_checked_never_a_pass(monkeypatch):
    monkeypatch.setattr(threads, "LIN_STEPS", 1)
    findings, checked = threads.judge(MAP, two_inserts(),
                                      lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c1", "c2", "r2", "r1", "c3", "r3"]))
    assert findings == [] and checked is False


def test_judge_unfinished_run_is_a_finding():
    findings, _ = threads.judge(MAP, two_inserts(), ["!ready", "ok", "!call 1 1"])
    assert [f.cls for f in findings] == ["operation-crash"]


def test_judge_invariants_after_the_threads():
    lines = lines_for({1: "ok", 2: "exists", 3: "value 10"}, ["c1", "c2", "r2", "r1", "c3", "r3"])
    lines.insert(-1, "!invariant 3 node 0x600000001000: broken")
    findings, _ = threads.judge(MAP, two_inserts(), lines)
    assert [f.cls for f in findings] == ["invariant-violation"]


def test_sched_finding_names_the_scheduler_line_and_ops_in_flight():
    h = two_inserts()
    out = ("noise\ncrashcheck: sched: deadlock at step 18: thread 1 waits for mutex #1 held by thread 2; "
           "thread 2 waits for rwlock (write) #3 held by thread 1\n")
    f = threads.sched_finding(86, out, h, ["!ready", "ok", "!call 1 1", "!call 2 2"], MAP)
    assert f.cls == "deadlock"
    assert "deadlock at step 18: thread 1 waits for mutex #1" in f.detail
    assert "thread 1: `insert 3 30` (operation 1)" in f.detail
    # one bug whatever the step: the group has no numbers
    g = threads.sched_finding(86, out.replace("step 18", "step 40"), h, ["!call 1 1", "!call 2 2"], MAP)
    assert f.group == g.group
    assert threads.sched_finding(87, "", h, [], MAP).cls == "livelock"
    assert threads.sched_finding(88, "", h, [], MAP).cls == "operation-hang"


@settings(max_examples=30, deadline=None, database=None)
@given(threads.threaded_histories(st.lists(st.sampled_from(["insert 1 1", "lookup 1", "delete 2"]), max_size=8)
                                  .map(lambda xs: with_load([op(x) for x in xs], min(2, len(xs)))), 3))
def test_strategy_keeps_load_and_orders_sections(h):
    assert h.nthreads == 3 and h.sched.split(":")[0] in ("random", "pct", "stale")   # drawn: --sched mixed
    assert list(h.thread_of) == sorted(h.thread_of)
    assert all(t == 0 for t in h.thread_of[:h.load]) and all(t >= 1 for t in h.thread_of[h.load:])
    assert threads.parse_text(MAP, history_text(MAP, h)).thread_of == h.thread_of


RL = registry.get("range_lock")


def test_judge_final_dump_must_follow_a_linearization():
    """A structure without PM dumps its state once the threads end (`!dump`): a held range missing
    from it is a violation even when every result was linearizable (a range lost from the lock
    whose holder never asks for it again)."""
    h = threads.make_threaded([], [[RL.parse_op("trylock 1 1"), RL.parse_op("trylock 2 2")],
                                   [RL.parse_op("trylock 5 5")]], "stale:1:8")
    lines = ["!ready", "!call 1 0", "!ret 1 0 ok", "!call 2 2", "!call 1 1", "!ret 1 1 ok", "!ret 2 2 ok"]
    ok, checked = threads.judge(RL, h, lines + ['!dump [["1", "1"], ["2", "2"], ["5", "5"]]', "!end 3"])
    assert ok == [] and checked
    lost, checked = threads.judge(RL, h, lines + ['!dump [["1", "1"], ["5", "5"]]', "!end 3"])
    assert checked and [f.cls for f in lost] == ["linearizability-violation"]
    assert "state after 2 threads ended" in lost[0].detail and "held {[1, 1], [5, 5]}" in lost[0].detail


def test_judge_a_maps_final_dump_in_its_own_notation():
    """A map's driver prints its final dump as `dump K V K V` (a structure with PM as well, since
    issue 36): an update another thread's copy of its node undid, which no later lookup read,
    shows there; the empty map's line is `dump` alone."""
    h = threads.make_threaded([op("insert 1 10")], [[op("update 1 11")], [op("insert 2 20")]], "stale:1:8")
    lines = ["!ready", "ok", "!call 1 1", "!call 2 2", "!ret 1 1 ok", "!ret 2 2 ok"]
    ok, checked = threads.judge(MAP, h, lines + ["!dump 1 11 2 20", "!end 3"])
    assert ok == [] and checked
    lost, checked = threads.judge(MAP, h, lines + ["!dump 1 10 2 20", "!end 3"])
    assert checked and [f.cls for f in lost] == ["linearizability-violation"]
    assert "state after 2 threads ended" in lost[0].detail
    assert MAP.parse_dump("") == () and threads.final_state(MAP, " 1 11") == MAP.parse_dump("1 11")
