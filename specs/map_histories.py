"""Hypothesis strategies for ordered-map histories (the ordered_map model's `histories`).

Owns what a generated map history looks like: key distributions, operation mixes, lengths. A history
first draws a small pool of distinct keys and then draws operations over that pool, so updates,
deletes and lookups hit existing keys, and shrinking can shorten the history and simplify keys
and values independently.

Key distributions (8-byte integer keys, as in the WORT thesis):
  dense      consecutive integers from a small base: long shared prefixes, full nodes
  sparse     uniform 64-bit integers: short prefixes, path compression everywhere
  clustered  a few random 64-bit cluster bases plus small offsets: dense inside, sparse between
  nested     one random base with a few bytes varied at three depths: groups inside groups,
             some of one key, so path-compressed nodes split and merge at every level
Byte-string keys (for structures with CC_KEYS_BYTES, e.g. HART): 1..24 bytes built from a few
shared prefixes, so tries split at many depths.

Operation mixes: insert-heavy, ycsb (a load phase of inserts, then reads and updates),
delete-heavy, and churn (insert every key, then delete them all in a random order: every node
grows and then shrinks and merges away).

Optional operations: a structure without update, delete or scan (its adapter leaves the verb NULL;
`driver info` lists "map_ops") gets histories without them (`map_ops=`); insert and lookup are
always there. Values and keys, as docs/trees.md "What the fuzzer draws" lists them: values are
the numbers 1..9999 (never 0) as 8 little-endian bytes, repeated for 16-byte values.

Thresholds: a structure that declares capacities (expect.json "thresholds", e.g. HART's 56-slot
chunks) gets a quarter of its histories from specs/threshold_histories.py: loads of up to C + 3
keys whose checked part crosses capacity C, growing a unit or emptying one to be recycled.

Bulk load: a third of the other histories start by inserting 17..48 keys, so nodes grow past their small forms
(ART's NODE16 -> NODE48 needs 17 children under one parent); Hypothesis shrinks it away when a
bug does not need it. The bulk inserts are a load phase (`Workload.load`, specs/model.py): run and traced as
set-up, never crash-checked. MAX_OPS bounds the checked part in every mix: a churn history of
a bulk load deletes at most MAX_OPS of its keys, one without inserts and deletes at most
MAX_OPS // 2 keys (a single insert when MAX_OPS is 1).
"""
from __future__ import annotations

from typing import Sequence

from dataclasses import replace

from hypothesis import strategies as st

from crashcheck.specs import threshold_histories
from crashcheck.specs.model import with_load
from crashcheck.specs.ordered_map import Op, nearest_keys


KEY_DISTRIBUTIONS = ("dense", "sparse", "clustered", "nested", "mixed")
MIXES = ("insert-heavy", "ycsb", "delete-heavy", "churn", "mixed")

# fresh keys next to each hot key that contended inserts aim at (`contend`)
NEIGHBOURS = 2

# Relative weights of insert, update, delete, lookup, scan.
_WEIGHTS = {
    "insert-heavy": (6, 1, 1, 1, 1),
    "ycsb": (2, 4, 0, 4, 1),
    "delete-heavy": (4, 1, 4, 1, 0),
}
_KINDS = ("insert", "update", "delete", "lookup", "scan")


def _u64_keys(distribution: str, n: int) -> st.SearchStrategy[list[int]]:
    if distribution == "dense":
        return st.integers(0, 1 << 12).map(lambda base: [base + i for i in range(n)])
    if distribution == "sparse":
        return st.lists(st.integers(0, (1 << 64) - 1), min_size=n, max_size=n, unique=True)
    if distribution == "clustered":
        def build(args: tuple[list[int], list[tuple[int, int]]]) -> list[int]:
            bases, picks = args
            keys = []
            for cluster, offset in picks:
                k = (bases[cluster % len(bases)] + offset) % (1 << 64)
                if k not in keys:
                    keys.append(k)
            return keys or [bases[0]]
        return st.tuples(st.lists(st.integers(0, (1 << 64) - 1).map(lambda b: b & ~0xFFF), min_size=1,
                                  max_size=3),
                         st.lists(st.tuples(st.integers(0, 2), st.integers(0, 255)), min_size=n, max_size=n)
                         ).map(build)
    if distribution == "nested":
        def nest(args: tuple[int, list[tuple[int, int, int]]]) -> list[int]:
            base, picks = args
            keys = []
            for hi, mid, lo in picks:
                # byte 1 takes one of 2 values, byte 4 one of 3, byte 7 one of 4
                k = base ^ (hi << 48) ^ (mid << 24) ^ lo
                if k not in keys:
                    keys.append(k)
            return keys
        return st.tuples(st.integers(0, (1 << 64) - 1),
                         st.lists(st.tuples(st.integers(0, 1), st.integers(0, 2), st.integers(0, 3)),
                                  min_size=n, max_size=n)).map(nest)
    raise ValueError(f"unknown key distribution {distribution!r} (one of {', '.join(KEY_DISTRIBUTIONS)})")


def _byte_keys(n: int) -> st.SearchStrategy[list[bytes]]:
    prefixes = st.lists(st.binary(min_size=1, max_size=12), min_size=1, max_size=3)

    def build(args: tuple[list[bytes], list[tuple[int, bytes]]]) -> list[bytes]:
        pre, picks = args
        keys: list[bytes] = []
        for i, suffix in picks:
            k = (pre[i % len(pre)] + suffix)[:24] or b"\0"
            if k not in keys:
                keys.append(k)
        return keys
    return st.tuples(prefixes, st.lists(st.tuples(st.integers(0, 2), st.binary(min_size=0, max_size=12)),
                                        min_size=n, max_size=n)).map(build)


def histories(*, reserved_keys: Sequence[bytes] = (), distinct_values: bool = False, **opts):
    """The map histories of `drawn_histories` (OPTS), made to respect what the structure declares
    (expect.json, docs/trees.md "Expectations"): no key of RESERVED_KEYS (keys it cannot store,
    such as 0 marking an empty slot), and with DISTINCT_VALUES every value written once only
    (code that takes a value for a pointer or compares neighbours' values). See `respect`."""
    drawn = drawn_histories(reserved_keys=reserved_keys, **opts)
    if not reserved_keys and not distinct_values:
        return drawn
    reserved = frozenset(reserved_keys)
    return drawn.map(lambda ops: respect(ops, reserved, distinct_values))


def respect(ops: list[Op], reserved: frozenset = frozenset(), distinct_values: bool = False) -> list[Op]:
    """OPS with every reserved key replaced by the nearest free key above it (below it at the top of
    the domain; a byte key gets a 0x01 byte added), the same one wherever it appears, so the
    history keeps its shape; and, with DISTINCT_VALUES, every value written a second time replaced
    by the next number not written yet, in the same width and notation as the drawn ones. The
    load phase is kept."""
    taken = {op.key for op in ops if op.kind != "scan"}
    moved: dict[bytes, bytes] = {}

    def free_key(key: bytes) -> bytes:
        if key not in moved:
            cand = key
            while cand in reserved or cand in taken:
                if len(cand) == 8:
                    x = int.from_bytes(cand, "big")
                    x = x + 1 if x < (1 << 64) - 1 and int.from_bytes(key, "big") < (1 << 63) else x - 1
                    cand = x.to_bytes(8, "big")
                else:
                    cand = cand + b"\x01"
            moved[key] = cand
            taken.add(cand)
        return moved[key]
    used: set[bytes] = set()
    top = 0
    for op in ops:
        if op.value and len(op.value) >= 8:
            top = max(top, int.from_bytes(op.value[:8], "little"))
    out = []
    for op in ops:
        # (a scan may start at any key)
        key = op.key if op.kind == "scan" else free_key(op.key) if op.key in reserved else op.key
        value = op.value
        if distinct_values and op.kind in ("insert", "update") and value:
            if value in used:
                top += 1
                width = len(value)
                value = (top.to_bytes(8, "little") * (width // 8) if width % 8 == 0
                         else top.to_bytes(8, "little")[:width].ljust(width, b"\0"))
            used.add(value)
        out.append(replace(op, key=key, value=value))
    return with_load(out, getattr(ops, "load", 0))


@st.composite
def drawn_histories(draw, *, keys: str = "mixed", mix: str = "mixed", min_ops: int = 1, max_ops: int = 12,
                    key_kind: str = "u64", value_size: int = 8, value_min: int | None = None,
                    max_keys: int = 8, map_ops: Sequence[str] | None = None,
                    thresholds: Sequence[int] = (), capacity: Sequence[tuple] = (),
                    reserved_keys: Sequence[bytes] = (), cross_only: bool = False, **_) -> list[Op]:
    """A history of MIN_OPS..MAX_OPS operations over at most MAX_KEYS distinct keys, with values
    of VALUE_SIZE bytes, or (for a structure taking VALUE_MIN..VALUE_SIZE bytes) of every
    multiple of 8 in that range. MAP_OPS: the operations the structure has (`driver info`
    map_ops; default all five); the others never appear (a churn without delete is insert-heavy).
    THRESHOLDS: capacities the structure declares (expect.json); a quarter of the histories then
    cross one of them (specs/threshold_histories.py). CAPACITY: without THRESHOLDS, the points a
    probe run observed ((on, keys, index), harness/check/capacity.py); a quarter of the histories
    then cross one the way the probe did (threshold_histories.observed); with CROSS_ONLY, every
    history does (a run's histories drawn to cross each point a few times, harness/run/search.py)."""
    have = set(_KINDS if map_ops is None else map_ops)
    if not {"insert", "lookup"} <= have:
        raise ValueError("a map structure needs at least insert and lookup")
    values = _values(value_size, value_size if value_min is None else value_min)
    if keys == "mixed":
        keys = draw(st.sampled_from(KEY_DISTRIBUTIONS[:4]))
    if mix == "mixed":
        mix = draw(st.sampled_from(MIXES[:4]))
    if mix not in _WEIGHTS and mix != "churn":
        raise ValueError(f"unknown operation mix {mix!r} (one of {', '.join(MIXES)})")
    if mix == "churn" and "delete" not in have:
        mix = "insert-heavy"
    if thresholds and draw(st.integers(0, 3)) == 0:
        # a quarter of the histories of a structure with capacity thresholds cross one
        def key_pool(n: int):
            if key_kind == "bytes":
                return _byte_keys(n)
            return _u64_keys(keys, n).map(lambda ks: [k.to_bytes(8, "big") for k in ks])
        low = value_size if value_min is None else value_min
        sizes = [n for n in range(8, value_size + 1, 8) if n >= low] if value_size % 8 == 0 else []
        return draw(threshold_histories.crossing(
            thresholds=thresholds, key_pool=key_pool, key_kind=key_kind, value_sizes=sizes or [8],
            kinds=_kinds(mix, have), have=have, max_ops=max_ops, min_ops=min_ops, random_ops=random_ops,
            value_size=value_size, value_min=value_min))
    if capacity and not thresholds and (cross_only or draw(st.integers(0, 3)) == 0):
        return draw(threshold_histories.observed(
            points=capacity, key_kind=key_kind, value_size=value_size, values=values, kinds=_kinds(mix, have),
            have=have, max_ops=max_ops, min_ops=min_ops, random_ops=random_ops, value_min=value_min,
            reserved=reserved_keys))
    bulk = draw(st.integers(0, 2)) == 0
    nkeys = draw(st.integers(17, 48)) if bulk else draw(st.integers(1, max_keys))
    if key_kind == "bytes":
        pool = draw(_byte_keys(nkeys))
    else:
        pool = [k.to_bytes(8, "big") for k in draw(_u64_keys(keys, nkeys))]
    if mix == "churn":
        order = draw(st.permutations(pool))
        inserts = [Op("insert", k, draw(values)) for k in pool]
        deletes = [Op("delete", k) for k in order]
        if bulk:
            # the bulk inserts are the load phase; the checked part deletes the grown nodes away
            return with_load(inserts + deletes[:max_ops], len(inserts))
        # Every key kept is inserted and deleted, so at most MAX_OPS // 2 keys (the draws above
        # stay the same, so a MAX_OPS that fits the pool gives the histories it always gave);
        # a MAX_OPS of 1 keeps one insert.
        kept = {op.key for op in inserts[:max(1, max_ops // 2)]}
        ops = [op for op in inserts + deletes if op.key in kept]
        return with_load(ops[:max_ops], 0)
    n = draw(st.integers(min_ops, max_ops))
    if bulk:
        # Load most keys first (not crash-checked), then the random operations over all of them,
        # so the checked part still inserts into, and deletes from, the grown nodes.
        spare = draw(st.integers(0, 4))
        load = [Op("insert", key, draw(values)) for key in pool[:len(pool) - spare]]
        n += len(load)
    else:
        load = []
    kinds = _kinds(mix, have)
    ops: list[Op] = list(load)
    # ycsb: load the keys first, as YCSB's load phase does.
    if mix == "ycsb" and not load:
        for key in pool[:n]:
            ops.append(Op("insert", key, draw(values)))
    random_ops(draw, ops, pool, n, kinds, values, value_size, value_min)
    return with_load(ops, len(load))


def contend(draw, ops: list[Op], start: int, kinds=()) -> list[Op]:
    """OPS with the operations from START on (the part dealt out to threads) aimed at one to three
    hot keys present when the threads start and at their node, so the threads meet on them: a
    lookup holding a key's leaf while another thread replaces or deletes it and a third allocates
    in its place, two deletes of one key, an insert racing an update. Each operation is re-aimed
    with probability 3/4 (its kind and value kept; a scan starts at the hot key); everything
    shrinks toward the history as drawn. With no key present at START the hot keys are among those
    the threads use.

    An insert is aimed at a fresh neighbour of a hot key instead (a key next to it, absent when
    the threads start, `NEIGHBOURS` per hot key: the same leaf node, the same trie node): an
    insert of a present key only answers `exists`, while a fresh key in the hot keys' node makes
    that node grow or split under the other threads' updates and deletes (a copy that loses a
    write another thread made in the old node), and two threads may insert the same one."""
    present = sorted(_present(ops[:start])) or sorted({op.key for op in ops[start:]})
    if not present:
        return ops
    hot = draw(st.lists(st.sampled_from(present), min_size=1, max_size=3, unique=True))
    taken = {op.key for op in ops}
    kind = "u64" if all(len(k) == 8 for k in taken) else "bytes"
    fresh = [k for h in hot for k in nearest_keys(h, NEIGHBOURS, kind, frozenset(taken))]
    out = list(ops[:start])
    for op in ops[start:]:
        if draw(st.integers(0, 3)):
            aim = fresh if op.kind == "insert" and fresh else hot
            op = replace(op, key=draw(st.sampled_from(aim)))
        out.append(op)
    if draw(st.integers(0, 3)):
        meet(draw, out, start, hot[0], fresh, kinds)
    return with_load(out, getattr(ops, "load", 0))


def meet(draw, ops: list[Op], start: int, key: bytes, fresh: list[bytes], kinds=()) -> None:
    """Turn operations of OPS from START (drawn places, each meeting's in order) into readers and
    writers meeting on one key, in one or more of three shapes (how many and which drawn,
    shrinking toward the first alone), each at places of its own while there is room:

    - a lookup of hot KEY, an update or delete of it, then an allocation (an insert of a fresh
      neighbour, else an update): dealt to threads, the lookup may hold KEY's leaf while another
      thread replaces or frees it and the memory is reused (a leaf freed without waiting for its
      readers: Heart's free-no-epoch);
    - an insert of a fresh key, then a lookup or a second insert of it: another thread sees the
      key, or answers `exists`, before the insert made it durable (a persistency race);
    - a delete of KEY, then a lookup or an insert of it: the same on the delete side.

    Kinds drawn from a mix rarely line up so (an insert-heavy mix has few lookups, a delete-heavy
    one few allocations: 1 of 127 drawn Heart histories had a lookup read a leaf an update then
    freed). Only kinds the history already has are used (a structure without update never sees
    one), and only values it already has; with KINDS (the structure's own operation kinds) any of
    those instead: a drawn history without a lookup (a third of lfhash's at seed 3) never met a
    reader otherwise. Several meetings in one history, because a race shows
    only with the right reader in another thread: lfhash's clear-no-help (a delete's cleared word
    taken as absent) needs a lookup of the deleted key, which one meeting of the three, with a
    drawn reader, dealt to another thread, gave about 1 history in 70 (seed 3 missed it in 90 s)."""
    have = set(kinds) or {op.kind for op in ops}
    value = next((op.value for op in ops if op.value), None)
    if len(ops) - start < 2 or value is None:
        return

    def op(kind: str, k: bytes) -> Op:          # a value for the kinds that carry one
        return Op(kind, k, value if kind in ("insert", "update") else b"")
    other = draw(st.sampled_from(fresh)) if fresh else None
    shapes = []
    writers = [k for k in ("update", "delete") if k in have]
    if "lookup" in have and writers:
        shape = [op("lookup", key), op(draw(st.sampled_from(writers)), key)]
        if "insert" in have and other is not None:
            shape.append(op("insert", other))
        elif "update" in have:
            shape.append(op("update", key))
        shapes.append(shape)
    readers = [k for k in ("lookup", "insert") if k in have]
    if "insert" in have and other is not None:
        shapes.append([op("insert", other), op(draw(st.sampled_from(readers)), other)])
    if "delete" in have and readers:
        shapes.append([op("delete", key), op(draw(st.sampled_from(readers)), key)])
    if not shapes:
        return
    order = draw(st.permutations(range(len(shapes))))
    free = list(range(start, len(ops)))
    for s in order[:draw(st.integers(1, len(shapes)))]:
        n = min(len(shapes[s]), len(free))
        if n < 2:
            break
        where = sorted(draw(st.lists(st.sampled_from(free), min_size=n, max_size=n, unique=True)))
        for i, new in zip(where, shapes[s]):
            ops[i] = new
        free = [i for i in free if i not in where]


def _kinds(mix: str, have: set[str]) -> list[str]:
    """The operation kinds of MIX, each repeated by its weight, those the structure has only
    (a churn's random part, where there is one, is insert-heavy)."""
    weights = _WEIGHTS.get(mix, _WEIGHTS["insert-heavy"])
    return [kind for kind, w in zip(_KINDS, weights) if kind in have for _ in range(w)]


def random_ops(draw, ops: list[Op], pool: list[bytes], n: int, kinds: list[str], values,
               value_size: int, value_min: int | None) -> None:
    """Append operations drawn from KINDS (repeated by weight) over the keys of POOL to OPS
    until it holds N. Inserts mostly pick keys not present yet and the other operations keys
    that are, so histories change the structure instead of bouncing off it (an insert into a
    full NODE48, a delete that leaves a node with one inner child)."""
    present = _present(ops)
    while len(ops) < n:
        kind = draw(st.sampled_from(kinds))
        absent = [k for k in pool if k not in present]
        there = [k for k in pool if k in present]
        preferred = absent if kind == "insert" else there
        key = draw(st.sampled_from(preferred if preferred and draw(st.integers(0, 3)) else pool))
        if kind in ("insert", "update"):
            value = draw(values)
            if kind == "update" and key in present and draw(st.booleans()):
                # Half the updates of a present key change its value's size (where sizes vary):
                # a structure that keeps sizes apart (HART's chunk chains) must move the value.
                old = next((len(op.value) for op in reversed(ops) if op.key == key and op.value), None)
                other = draw(_values(value_size, value_size if value_min is None else value_min,
                                     exclude=old))
                value = other if other is not None else value
            ops.append(Op(kind, key, value))
            present.add(key)
        elif kind == "scan":
            ops.append(Op("scan", key, count=draw(st.integers(1, 8))))
        elif kind == "delete":
            ops.append(Op(kind, key))
            present.discard(key)
        else:
            ops.append(Op(kind, key))


def _present(ops: list[Op]) -> set[bytes]:
    """The keys present after OPS (an insert or update adds its key, a delete removes it; updates
    of absent keys only happen in histories whose earlier ops the caller wrote, which insert)."""
    present: set[bytes] = set()
    for op in ops:
        if op.kind in ("insert", "update"):
            present.add(op.key)
        elif op.kind == "delete":
            present.discard(op.key)
    return present


def _values(size: int, min_size: int, exclude: int | None = None) -> st.SearchStrategy[bytes | None]:
    # Small numbers read well in reports and shrink to 1; distinct values make lost updates
    # visible. Wider values repeat the number in every 8-byte piece, so a value torn between
    # two writes shows up as pieces of two different numbers. A structure that takes several
    # sizes gets every multiple of 8 it takes (HART keeps 8- and 16-byte values in separate
    # chunk chains, so an update that changes the size moves the value between chains).
    # EXCLUDE: a size not to draw (None when only that size exists).
    if size % 8:
        return st.none() if exclude is not None else st.binary(min_size=size, max_size=size)
    sizes = [n for n in range(8, size + 1, 8) if n >= min_size and n != exclude]
    number = st.integers(1, 9999)
    if not sizes:
        return st.none()
    if len(sizes) == 1:
        return number.map(lambda v, n=sizes[0]: v.to_bytes(8, "little") * (n // 8))
    return st.tuples(number, st.sampled_from(sizes)).map(lambda p: p[0].to_bytes(8, "little") * (p[1] // 8))
