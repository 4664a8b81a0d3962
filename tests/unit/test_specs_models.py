"""Models as data: the registry, the ordered map as a Model, and the range lock against brute force."""
import pickle

import pytest
from hypothesis import given, settings, strategies as st

from crashcheck.specs import model as M
from crashcheck.specs import registry, ordered_map, range_lock
from crashcheck.specs.range_lock import U64_MAX, Op as R


def test_registry():
    assert {"ordered_map", "range_lock"} <= set(registry.names())
    assert registry.get("ordered_map") is ordered_map.MODEL
    assert registry.get("range_lock") is range_lock.MODEL
    with pytest.raises(ValueError, match="ordered_map"):
        registry.get("btree")
    for name in registry.names():          # executors pickle models to send them to workers
        assert pickle.loads(pickle.dumps(registry.get(name))) is registry.get(name)
    toy = M.Model(name="toy", init=lambda: 0, step=lambda s, op: [("ok", s)], parse_op=str, op_text=str)
    with pytest.raises(TypeError, match="not registered"):
        pickle.dumps(toy)


# -- the ordered map as a Model ------------------------------------------------------------------

MAP_LINES = ["insert 5 50", "insert 5 51", "lookup 5", "update 6 1", "insert 2 20", "scan 0 10",
             "delete 5", "lookup 5", "insert x:6162 x:00ff", "scan x:00 3"]


def test_ordered_map_model_is_the_legacy_functions():
    m = registry.get("ordered_map")
    ops = [m.parse_op(line) for line in MAP_LINES]
    assert [m.op_text(op) for op in ops] == MAP_LINES
    state, outs = M.run(m, ops)
    legacy_state, legacy_outs = ordered_map.run(ops)
    assert (state, outs) == (legacy_state, legacy_outs)
    assert [s for (s,) in M.prefix_states(m, ops)] == ordered_map.prefix_states(ops)
    assert [m.output_text(m.parse_output(x)) for x in outs] == outs
    dump = [[k.hex(), v.hex()] for k, v in reversed(state)]
    assert m.dump_state(dump) == state
    assert m.state_json(state)[0] == [ordered_map.key_text(state[0][0]), ordered_map.value_text(state[0][1])]


map_ops = st.builds(lambda kind, k, v: ordered_map.Op(kind, k.to_bytes(8, "big"), v.to_bytes(8, "little"))
                    if kind in ("insert", "update") else ordered_map.Op(kind, k.to_bytes(8, "big")),
                    st.sampled_from(["insert", "update", "delete", "lookup"]), st.integers(0, (1 << 64) - 1),
                    st.integers(0, 3))


@settings(max_examples=60, deadline=None)
@given(st.lists(map_ops, max_size=8), st.sampled_from([("u64", 8), ("u64", 16), ("bytes", 8)]),
       st.booleans())
def test_session_runs_the_models_followup(ops, kind, on):
    """The follow-up a checker session runs after recovery is its structure's model's (with the
    structure's key kind and value size), or nothing when follow-ups are off."""
    from types import SimpleNamespace
    from crashcheck.harness.check.session import Session
    fake = SimpleNamespace(model=ordered_map.MODEL, settings=SimpleNamespace(followup=on),
                           structure=SimpleNamespace(key_kind=kind[0], value_size=kind[1],
                                                     map_ops=ordered_map.OP_KINDS))
    want = ordered_map.MODEL.followup(ops, key_kind=kind[0], value_size=kind[1]) if on else []
    assert Session.followup(fake, ops) == want
    if on and ops:
        assert want and all(isinstance(op, ordered_map.Op) for op in want)


# -- the range lock against a brute-force lock ----------------------------------------------------

POINTS = (0, 1, 2, 3, 7, U64_MAX - 2, U64_MAX - 1, U64_MAX)
rl_ranges = range_lock.ranges(POINTS)
rl_ops = st.builds(lambda kind, r: R(kind, *r), st.sampled_from(range_lock.KINDS), rl_ranges)


def brute_overlap(a, b):
    """Ranges with endpoints in POINTS share an integer iff they share one of POINTS (the larger
    start is in both), so trying every point of the universe is a complete check."""
    return any(a[0] <= x <= a[1] and b[0] <= x <= b[1] for x in POINTS)


def brute_step(held, op):
    rng = (op.start, op.end)
    if op.kind == "trylock":
        if any(brute_overlap(h, rng) for h in held):
            return "fail", held
        return "ok", held + [rng]
    if rng in held:
        return "ok", [h for h in held if h != rng]
    return "fail", held


@settings(max_examples=300, deadline=None)
@given(st.lists(rl_ops, max_size=16))
def test_range_lock_step_matches_brute_force(ops):
    m = range_lock.MODEL
    state, held = m.init(), []
    for op in ops:
        outcomes = m.step(state, op)
        assert len(outcomes) == 1                      # the paper's lock is deterministic
        out, state = outcomes[0]
        want, held = brute_step(held, op)
        assert out == want, (op, state)
        assert state == tuple(sorted(held))
        assert all(not brute_overlap(a, b) for i, a in enumerate(state) for b in state[i + 1:])


@settings(max_examples=200, deadline=None)
@given(st.lists(rl_ops, max_size=10), rl_ranges)
def test_release_only_of_exactly_held(ops, rng):
    m = range_lock.MODEL
    state, _ = M.run(m, ops)
    out, after = m.step(state, R("release", *rng))[0]
    if rng in state:
        assert out == "ok" and rng not in after and len(after) == len(state) - 1
    else:                                # a sub-, super- or overlapping range is not released
        assert (out, after) == ("fail", state)


@settings(max_examples=200, deadline=None)
@given(st.lists(rl_ops, max_size=10), rl_ranges)
def test_spurious_lock_lists_every_outcome(ops, rng):
    strict, weak = range_lock.MODEL, range_lock.SPURIOUS
    state, _ = M.run(strict, ops)
    op = R("trylock", *rng)
    strict_out = strict.step(state, op)
    weak_out = weak.step(state, op)
    assert strict_out[0] in weak_out
    if strict_out[0][0] == "ok":
        assert sorted(weak_out) == sorted(strict_out + [("fail", state)])
    else:
        assert weak_out == strict_out
    # the powerset view keeps both branches until an output picks one
    after = M.advance(weak, [state], op)
    assert len(after) == len(weak_out)
    assert M.advance(weak, [state], op, "ok") == ([strict_out[0][1]] if strict_out[0][0] == "ok" else [])


def test_range_lock_notation_and_edges():
    m = range_lock.MODEL
    for line in ["trylock 0 18446744073709551615", "release 5 5"]:
        assert m.op_text(m.parse_op(line)) == line
    for bad in ["trylock 5 4", "trylock -1 3", "trylock 0 18446744073709551616", "lock 1 2", "trylock 1"]:
        with pytest.raises(ValueError):
            m.parse_op(bad)
    with pytest.raises(ValueError):
        m.parse_output("maybe")
    ops = [m.parse_op(x) for x in ["trylock 0 0", "trylock 18446744073709551615 18446744073709551615",
                                   "trylock 1 18446744073709551614", "trylock 0 1", "release 0 1",
                                   "release 0 0"]]
    state, outs = M.run(m, ops)
    assert outs == ["ok", "ok", "ok", "fail", "fail", "ok"]
    assert state == ((1, U64_MAX - 1), (U64_MAX, U64_MAX))
    assert m.dump_state([["18446744073709551615", "18446744073709551615"], [1, U64_MAX - 1]]) == state
    follow = m.followup(ops)
    assert [m.op_text(o) for o in follow[-2:]] == ["trylock 0 18446744073709551615",
                                                     "release 0 18446744073709551615"]


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_models_histories_hook(data):
    for name in ("ordered_map", "range_lock"):
        m = registry.get(name)
        ops = data.draw(m.histories(max_ops=6))
        assert [m.parse_op(m.op_text(op)) for op in ops] == list(ops)
