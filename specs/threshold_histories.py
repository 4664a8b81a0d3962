"""Map histories that cross a structure's capacity thresholds (the ordered_map model's histories
with `thresholds=`).

Owns what a history looks like that drives a structure past a capacity it declares (expect.json
"thresholds": a unit, such as HART's 56-slot chunk or a node type, that holds C keys). Plain
histories hold at most 48 keys, so a path that only runs when a unit overflows, or when one
empties and is recycled, is never crash-checked without these. Two shapes, for a capacity C drawn
from the structure's list:

  grow     the load phase inserts C - s keys (s in 0..2); the checked part first inserts s + 1
           fresh keys, so key C + 1 (a second chunk, a node's growth) is inserted by a checked
           operation, then random operations over the same keys.
  recycle  (structures with delete) the load inserts C + 1 + e keys (e in 0..2), so a second unit
           exists, and deletes the oldest C - r of them (r in 1..3); the checked part deletes
           the r keys left of the oldest C, which empties the first unit (a chunk recycled, a
           node shrunk), then random operations whose inserts refill it.

Keys are inserted in pool order, so "the oldest C keys" are the ones the first unit got where a
structure fills units in allocation order (HART's chunks). The values of a crossing history have
one size, so a structure with a chain per value size (HART) crosses the threshold in a value chain
too. The load phase is set-up (Workload.load), never crash-checked; the checked part stays within
max_ops. Hypothesis shrinks a crossing history like any other, but a bug that needs the crossing
keeps it.
"""
from __future__ import annotations

from hypothesis import strategies as st

from crashcheck.specs.model import with_load
from crashcheck.specs.ordered_map import Op

SHAPES = ("grow", "recycle")


def fill_distinct(pool: list[bytes], n: int, key_kind: str) -> list[bytes]:
    """POOL extended to N distinct keys (a drawn pool may repeat keys: nested u64 keys have at
    most 24 values): each extra key follows the pool's last one, as the next integer (u64) or
    with a counter appended (bytes, at most 24 of them)."""
    out = list(dict.fromkeys(pool))
    seen = set(out)
    i = 0
    while len(out) < n:
        i += 1
        if key_kind == "bytes":
            base = out[-1] if out else b"\x01"
            k = (base[:21] + i.to_bytes(3, "big"))
        else:
            last = int.from_bytes(out[-1], "big") if out else 0
            k = ((last + i) % (1 << 64)).to_bytes(8, "big")
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


@st.composite
def crossing(draw, *, thresholds, key_pool, key_kind, value_sizes, kinds, have, max_ops, min_ops=1,
             random_ops, value_size, value_min):
    """One crossing history (see the module note). KEY_POOL(n): a strategy of a list of keys (may
    repeat); VALUE_SIZES: the value sizes the structure takes; KINDS: operation kinds by weight
    for the random part; RANDOM_OPS: crashcheck.specs.map_histories.random_ops."""
    cap = draw(st.sampled_from(sorted(thresholds)))
    shape = draw(st.sampled_from(SHAPES)) if "delete" in have else "grow"
    size = draw(st.sampled_from(value_sizes))
    values = st.integers(1, 9999).map(lambda v: v.to_bytes(8, "little") * (size // 8))
    if shape == "grow":
        s = draw(st.integers(0, min(2, max_ops - 1, cap - 1)))
        loaded = cap - s
        pool = fill_distinct(draw(key_pool(cap + 4)), cap + 4, key_kind)
        load = [Op("insert", k, draw(values)) for k in pool[:loaded]]
        checked = [Op("insert", k, draw(values)) for k in pool[loaded:loaded + s + 1]]
    else:
        e = draw(st.integers(0, 2))
        r = draw(st.integers(1, min(3, max_ops, cap)))
        total = cap + 1 + e
        pool = fill_distinct(draw(key_pool(total + 3)), total + 3, key_kind)
        load = [Op("insert", k, draw(values)) for k in pool[:total]]
        load += [Op("delete", k) for k in pool[:cap - r]]
        checked = [Op("delete", k) for k in pool[cap - r:cap]]
    n = len(load) + max(len(checked), draw(st.integers(min_ops, max_ops)))
    ops = load + checked
    random_ops(draw, ops, pool, n, kinds, values, value_size, value_min)
    return with_load(ops, len(load))



@st.composite
def observed(draw, *, points, key_kind, value_size, values, kinds, have, max_ops, min_ops=1, random_ops,
             value_min, reserved=()):
    """One history that crosses a capacity point a probe run observed (harness/check/capacity.py):
    POINTS are (on, keys, index[, pattern]) of the probe's history (specs/capacity_probe.py; a
    pattern's own history when one is named). The load phase
    replays the probe's history up to just before the point (S of 0..2 operations earlier), the
    checked part runs the S + 1 operations that cross it (key KEYS + 1 inserted, or the structure
    shrunk from KEYS keys by a delete), then random operations over the probe's keys near it,
    with values drawn from VALUES."""
    from crashcheck.specs.capacity_probe import probe_history
    on, keys, index, *pattern = draw(st.sampled_from(sorted(points)))
    probe = probe_history(key_kind, value_size, sorted(have), reserved, n=index + 4, pattern=pattern[0] if pattern else "")
    s = draw(st.integers(0, min(2, max_ops - 1, index)))
    load, checked = probe[:index - s], probe[index - s:index + 1]
    pool = list(dict.fromkeys(op.key for op in probe[max(0, index - 8):index + 4]))
    n = len(load) + max(len(checked), draw(st.integers(min_ops, max_ops)))
    ops = list(load) + list(checked)
    random_ops(draw, ops, pool, n, kinds, values, value_size, value_min)
    return with_load(ops, len(load))
