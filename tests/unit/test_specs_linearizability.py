"""Linearizability and durable linearizability: the checker against a brute-force enumerator of
every linearization, on small random 2-3 thread histories of the ordered map and the range lock
(legal ones from a real execution, illegal ones by perturbing an output), plus targeted cases."""
import itertools

import pytest
from hypothesis import given, settings, strategies as st

from crashcheck.specs import linearizability as lin
from crashcheck.specs import ordered_map, range_lock
from crashcheck.specs.history import History, Operation
from crashcheck.specs.model import Model
from crashcheck.specs.range_lock import U64_MAX

MAP = ordered_map.MODEL
LOCK = range_lock.MODEL
WEAK = range_lock.SPURIOUS


# -- brute force ----------------------------------------------------------------------------------

def brute_finals(history, model):
    """Every state some linearization of all completed ops plus any subset of the pending ones
    (consistent with real-time order, completed outputs matching) ends in."""
    done = [o for o in history if not o.pending]
    pend = [o for o in history if o.pending]
    finals = set()
    for r in range(len(pend) + 1):
        for extra in itertools.combinations(pend, r):
            chosen = done + list(extra)
            for perm in itertools.permutations(chosen):
                if any(perm[j].precedes(perm[i]) for i in range(len(perm)) for j in range(i + 1, len(perm))):
                    continue
                states = {model.init()}
                for o in perm:
                    states = {s2 for s in states for out, s2 in model.step(s, o.op)
                              if o.pending or out == o.output}
                    if not states:
                        break
                finals |= states
    return finals


def replay_witness(history, model, order, complete=True):
    """ORDER is a legal linearization (with COMPLETE, of all completed ops; else a prefix of
    one): real-time consistent, outputs matching; returns the states it may end in."""
    placed = set(order)
    assert len(placed) == len(order)
    if complete:
        assert {o.id for o in history if not o.pending} <= placed
    for i, a in enumerate(order):
        for b in order[i + 1:]:
            assert not history[b].precedes(history[a])
    states = {model.init()}
    for i in order:
        o = history[i]
        states = {s2 for s in states for out, s2 in model.step(s, o.op) if o.pending or out == o.output}
        assert states, f"witness breaks at #{i}"
    return states


# -- random concurrent histories ---------------------------------------------------------------

KEYS = [k.to_bytes(8, "big") for k in (1, 2, 3)]
VALS = [v.to_bytes(8, "little") for v in (1, 2)]
map_ops = st.one_of(
    st.builds(lambda kind, k, v: ordered_map.Op(kind, k, v), st.sampled_from(["insert", "update"]),
              st.sampled_from(KEYS), st.sampled_from(VALS)),
    st.builds(lambda kind, k: ordered_map.Op(kind, k), st.sampled_from(["delete", "lookup"]),
              st.sampled_from(KEYS)),
    st.builds(lambda k: ordered_map.Op("scan", k, count=2), st.sampled_from(KEYS)))
MAP_OUTPUTS = ["ok", "exists", "notfound", "value 1", "value 2", "scan", "scan 1 1"]

POINTS = (0, 1, 5, U64_MAX - 1, U64_MAX)
lock_ops = st.builds(lambda kind, r: range_lock.Op(kind, *r), st.sampled_from(range_lock.KINDS),
                     range_lock.ranges(POINTS))
LOCK_OUTPUTS = ["ok", "fail"]

SUBJECTS = [(MAP, map_ops, MAP_OUTPUTS), (LOCK, lock_ops, LOCK_OUTPUTS), (WEAK, lock_ops, LOCK_OUTPUTS)]
IDS = ["ordered_map", "range_lock", "range_lock_spurious"]


@st.composite
def executions(draw, model, ops, crash=False, max_total=6):
    """A real execution: 2-3 threads, each op with call < linearization point < return, events
    interleaved at random, outputs from running the linearization points through the model (a
    random outcome where it is nondeterministic). With CRASH, the run is cut at a random event:
    an op called but not returned is in flight (its point may or may not have passed).
    Returns (history, the state the execution ended in)."""
    nthreads = draw(st.integers(2, 3))
    counts = [draw(st.integers(1, 3)) for _ in range(nthreads)]
    while sum(counts) > max_total:
        counts[counts.index(max(counts))] -= 1
    per = [[draw(ops) for _ in range(c)] for c in counts]
    queues = {t: [(kind, j) for j in range(len(per[t])) for kind in ("call", "lin", "ret")]
              for t in range(nthreads)}
    events = []
    while any(queues.values()):
        t = draw(st.sampled_from([t for t in queues if queues[t]]))
        events.append((t,) + queues[t].pop(0))
    if crash:
        events = events[:len(events) - draw(st.integers(0, len(events)))]   # mostly late cuts
    state = model.init()
    rows = {}
    for pos, (t, kind, j) in enumerate(events):
        if kind == "call":
            rows[(t, j)] = [t, per[t][j], pos, None, None]
        elif kind == "lin":
            outcomes = model.step(state, per[t][j])
            out, state = outcomes[draw(st.integers(0, len(outcomes) - 1))]
            rows[(t, j)][4] = out
        else:
            rows[(t, j)][3] = pos
    table = []
    for row in sorted(rows.values(), key=lambda r: r[2]):
        if row[3] is None:
            row[4] = None
        table.append(tuple(row))
    return History.build(table), state


def perturb(draw, history, outputs):
    done = [o for o in history if not o.pending]
    if not done:
        return history
    victim = draw(st.sampled_from(done))
    new = draw(st.sampled_from([x for x in outputs if x != victim.output]))
    return History(Operation(o.id, o.thread, o.op, o.call, o.ret, new if o.id == victim.id else o.output)
                   for o in history)


@pytest.mark.parametrize("model, ops, outputs", SUBJECTS, ids=IDS)
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_check_agrees_with_brute_force(model, ops, outputs, data):
    history, _ = data.draw(executions(model, ops))
    assert lin.check(history, model).ok                   # a real execution is linearizable
    if data.draw(st.booleans()):
        history = perturb(data.draw, history, outputs)
    result = lin.check(history, model)
    assert not result.unknown
    assert result.ok == bool(brute_finals(history, model)), history
    if result.ok:
        assert replay_witness(history, model, list(result.witness))
    else:
        assert result.stuck is not None and result.stuck not in result.longest
        replay_witness(history, model, list(result.longest), complete=False)
        assert f"#{result.stuck}" in result.reason


@pytest.mark.parametrize("model, ops, outputs", SUBJECTS, ids=IDS)
@settings(max_examples=120, deadline=None)
@given(data=st.data())
def test_durable_agrees_with_brute_force(model, ops, outputs, data):
    history, real = data.draw(executions(model, ops, crash=True))
    assert lin.check_durable(history, model, real).ok     # what really happened is explained
    if data.draw(st.booleans()):
        history = perturb(data.draw, history, outputs)
    # a recovered state: the real one, or the end of some other execution of the same ops
    other = real
    if data.draw(st.booleans()):
        state = model.init()
        for o in data.draw(st.permutations(list(history))):
            if data.draw(st.booleans()):
                state = model.step(state, o.op)[0][1]
        other = state
    result = lin.check_durable(history, model, other)
    assert not result.unknown
    assert result.ok == (other in brute_finals(history, model))
    if result.ok:
        assert other in replay_witness(history, model, list(result.witness))


# -- targeted cases ----------------------------------------------------------------------------

def _reg_step(v, op):
    """A register: ("write", x) -> "ok"; ("read",) -> the value."""
    if op[0] == "write":
        return [("ok", op[1])]
    return [(v, v)]


REGISTER = Model(name="register", init=lambda: 0, step=_reg_step, parse_op=lambda s: tuple(s.split()),
                 op_text=lambda op: " ".join(map(str, op)))


def test_classic_non_linearizable_register():
    # t0 writes 1 over [0, 10]; t1 reads 1 over [1, 2], then reads 0 over [3, 4]: once a read saw
    # the write, a later read cannot see the old value
    h = History.build([(0, ("write", 1), 0, 10, "ok"), (1, ("read",), 1, 2, 1), (1, ("read",), 3, 4, 0)])
    r = lin.check(h, REGISTER)
    assert r.illegal and r.stuck == 2 and r.longest == (0, 1)
    assert "#2" in r.reason and "read" in r.reason
    # the same reads in the other order overlap the write: legal (read 0, write, read 1)
    h2 = History.build([(0, ("write", 1), 0, 10, "ok"), (1, ("read",), 1, 2, 0), (1, ("read",), 3, 4, 1)])
    r2 = lin.check(h2, REGISTER)
    assert r2.ok and r2.witness == (1, 0, 2) and r2.states == (1,)


def test_overlap_makes_it_legal():
    # a read returning the new value before the write was called: illegal ...
    early = History.build([(1, ("read",), 0, 1, 1), (0, ("write", 1), 2, 3, "ok")])
    assert lin.check(early, REGISTER).illegal
    # ... but legal as soon as the two overlap (also when one returns at the other's call time)
    for call in (0, 1):
        h = History.build([(1, ("read",), 0, 1, 1), (0, ("write", 1), call, 3, "ok")])
        assert lin.check(h, REGISTER).ok


def test_range_lock_two_threads_same_range():
    P = LOCK.parse_op
    both = History.build([(0, P("trylock 0 5"), 0, 3, "ok"), (1, P("trylock 3 9"), 1, 2, "ok")])
    r = lin.check(both, LOCK)
    assert r.illegal
    one = History.build([(0, P("trylock 0 5"), 0, 3, "ok"), (1, P("trylock 3 9"), 1, 2, "fail")])
    assert lin.check(one, LOCK).witness == (0, 1)
    # a spurious failure is legal only for the weak lock
    alone = History.build([(0, P("trylock 0 5"), 0, 1, "fail")])
    assert lin.check(alone, LOCK).illegal and lin.check(alone, WEAK).ok


def test_pending_ops_may_or_may_not_take_effect():
    # t1's write never returned; t0 reads 0 then 1: legal only if the write took effect in between
    h = History.build([(1, ("write", 1), 0, None, None), (0, ("read",), 1, 2, 0), (0, ("read",), 3, 4, 1)])
    assert lin.check(h, REGISTER).witness == (1, 0, 2)
    h2 = History.build([(1, ("write", 1), 5, None, None), (0, ("read",), 1, 2, 0), (0, ("read",), 3, 4, 1)])
    assert lin.check(h2, REGISTER).illegal          # called after the read of 1 returned


def test_durable_hand_written():
    P = MAP.parse_op

    def st_(*pairs):
        return tuple((k.to_bytes(8, "big"), v.to_bytes(8, "little")) for k, v in pairs)

    h = History.build([
        (0, P("insert 1 10"), 0, 1, "ok"),
        (0, P("update 1 11"), 2, None, None),         # in flight on thread 0
        (1, P("insert 2 20"), 1.5, None, None),       # in flight on thread 1
    ])
    for state in (st_((1, 10)), st_((1, 11)), st_((1, 10), (2, 20)), st_((1, 11), (2, 20))):
        r = lin.check_durable(h, MAP, state)
        assert r.ok, state
        assert set(r.witness) >= {0}
    r = lin.check_durable(h, MAP, st_((1, 11), (2, 20)))
    assert r.witness[0] == 0 and set(r.witness) == {0, 1, 2} and "in flight and applied" in r.reason
    lost = lin.check_durable(h, MAP, st_((2, 20)))              # the completed insert is gone
    assert lost.illegal and "recovered state" in lost.reason and st_((1, 10)) in lost.states
    assert lin.check_durable(h, MAP, st_((1, 12))).illegal     # a value nobody wrote
    # a completed op's wrong output: the history itself is not linearizable
    bad = History.build([(0, P("insert 1 10"), 0, 1, "ok"), (1, P("lookup 1"), 2, 3, "notfound")])
    r = lin.check_durable(bad, MAP, st_((1, 10)))
    assert r.illegal and r.reason.startswith("before the crash") and r.stuck == 1
    with pytest.raises(ValueError, match="never returned"):
        History.build([(0, P("insert 1 10"), 0, None, None), (0, P("lookup 1"), 2, None, None)]).validate()


def test_budget_gives_unknown_never_ok():
    # many concurrent writes and reads of a register: plenty of search
    rows = [(t, ("write", t), 0, 100, "ok") for t in range(12)]
    rows.append((12, ("read",), 0, 100, 99))                    # illegal: nobody wrote 99
    h = History.build(rows)
    r = lin.check(h, REGISTER, max_steps=50)
    assert r.unknown and not r.ok and not r.illegal and "not checked" in r.reason
    assert lin.check(h, REGISTER, max_steps=None, timeout=0.0).unknown
    assert lin.check(h, REGISTER).illegal                       # with the default budget: decided
    assert lin.check_durable(h, REGISTER, 3, max_steps=50).unknown
    with pytest.raises(TypeError, match="three-valued"):
        bool(r)


def test_history_rules_and_events():
    h = History.from_events([("call", 0, "a"), ("call", 1, "b"), ("return", 0, "x"), ("call", 0, "c")])
    assert [(o.thread, o.op, o.call, o.ret, o.output) for o in h] == [
        (0, "a", 0, 2, "x"), (1, "b", 1, None, None), (0, "c", 3, None, None)]
    assert h.threads() == [0, 1] and [o.id for o in h.pending()] == [1, 2]
    h.validate()
    with pytest.raises(ValueError, match="overlap"):
        History.build([(0, "a", 0, 5, 1), (0, "b", 3, 6, 1)]).validate()
    with pytest.raises(ValueError, match="not after"):
        History.build([(0, "a", 4, 4, 1)]).validate()
    with pytest.raises(ValueError):
        History.from_events([("return", 0, "x")])
    seq = History.sequential(["a", "b"], ["x", "y"], inflight="c")
    assert [o.precedes(seq[2]) for o in seq] == [True, True, False]
    assert "(in flight)" in seq.text()


def test_a_sequential_start_is_placed_once_and_kept_in_the_witness():
    """A load phase (operations that each returned before the next was called) is linearized in
    its one order once, outside the search: the witness and the verdicts are what the full search
    gives, and a start whose output no state gives is still reported (issue 36: a threaded history
    replaying 287 probe operations paid for them at every crash state)."""
    from crashcheck.specs.history import History
    from crashcheck.specs import linearizability as lin
    from crashcheck.specs.ordered_map import MODEL as M
    rows = [(0, M.parse_op(f"insert {k} {k}"), 2 * k, 2 * k + 1, "ok") for k in range(6)]
    good = History.build(rows + [(1, M.parse_op("lookup 3"), 20, 23, "value 3"), (2, M.parse_op("delete 3"), 21, 22, "ok")])
    r = lin.check(good, M)
    assert r.ok and r.witness[:6] == (0, 1, 2, 3, 4, 5) and sorted(r.witness) == list(range(8))
    assert r.witness[6:] == (6, 7)              # the lookup before the delete: the only order
    bad = History.build(rows[:3] + [(0, M.parse_op("insert 1 9"), 6, 7, "ok")] + rows[4:])
    r = lin.check(bad, M)
    assert r.illegal and r.stuck == 3 and r.longest == (0, 1, 2)
    durable = lin.check_durable(good, M, tuple(sorted((k.to_bytes(8, "big"), k.to_bytes(8, "little"))
                                                      for k in range(6) if k != 3)))
    assert durable.ok
