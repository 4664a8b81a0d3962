"""The history of a capacity probe: keys inserted one by one, then deleted one by one, so that the
points where a structure's code path changes as it grows and shrinks (a node splits or changes
type, an allocation of another size or from another site) show in its trace, one operation each
(harness/check/capacity.py observes them; specs/threshold_histories.py `observed` crosses them).

Owns the probe's keys, which histories that cross an observed point reuse so that they build the
same shape the probe saw: 8-byte integer keys 1, 2, 3, ... (neighbours differ in the last byte,
so they share a leaf, a node of a trie); byte keys one shared prefix and a last byte counting up.
No Hypothesis here: the harness builds the probe from this module without it.
"""
from __future__ import annotations

from typing import Sequence

from crashcheck.specs.ordered_map import Op

# Keys the probe inserts (then deletes): past MAX_POINT, the largest capacity it looks for, so that
# a point near it is followed by a few steady operations.
PROBE_KEYS = 160
MAX_POINT = 150
BYTE_PREFIX = b"\x40cap"
# The probe first inserts and deletes its first WARMUP keys, so the ordinary path of each kind of
# operation is learnt on a small structure: a delete's first run at 160 keys (a promotion from a
# level that had been full, a node256 emptied by one) is then a point, where learning from the
# first deletes of the full structure took those paths for ordinary ones.
WARMUP = 8
# Patterns the probe also runs, each on a fresh structure after the main history: keys that
# collide where growing one by one never makes them (a bucket of a table hashed by the key's low
# bits fills, overflows into another level, and moves entries back when it empties; ordinary
# keys 1, 2, 3, ... spread over every bucket). Each inserts PATTERN_KEYS keys that share their
# last byte (byte keys: their tail), then deletes them oldest first or newest first.
PATTERNS = ("keys 256 apart", "keys 256 apart, newest deleted first")
PATTERN_KEYS = 24
PATTERN_TAIL = 0x2a


def probe_keys(n: int, key_kind: str = "u64", reserved: Sequence[bytes] = ()) -> list[bytes]:
    """The probe's first N keys, in insertion order, none of RESERVED (keys the structure cannot
    store). A byte key's last byte counts up within one prefix, then a longer prefix begins."""
    out: list[bytes] = []
    skip = set(reserved)
    i = 0
    while len(out) < n:
        i += 1
        if key_kind == "bytes":
            k = BYTE_PREFIX + bytes([i // 255]) * (i >= 255) + bytes([i % 255 + 1])
        else:
            k = i.to_bytes(8, "big")
        if k not in skip:
            out.append(k)
    return out


def probe_value(i: int, value_size: int = 8) -> bytes:
    """The I-th value the probe writes (all distinct, never 0), VALUE_SIZE bytes."""
    v = (i + 1).to_bytes(8, "little")
    return v * (value_size // 8) if value_size % 8 == 0 else v[:value_size].ljust(value_size, b"\0")


def pattern_keys(key_kind: str = "u64", reserved: Sequence[bytes] = ()) -> list[bytes]:
    """PATTERN_KEYS keys that collide in their last byte (u64: 256 apart; bytes: a shared tail
    after a first byte counting up), none of RESERVED."""
    out = []
    for i in range(1, 4 * PATTERN_KEYS):
        k = (bytes([i]) + BYTE_PREFIX if key_kind == "bytes" else (i * 256 + PATTERN_TAIL).to_bytes(8, "big"))
        if k not in reserved:
            out.append(k)
    return out[:PATTERN_KEYS]


def probe_history(key_kind: str = "u64", value_size: int = 8, map_ops: Sequence[str] | None = None,
                  reserved: Sequence[bytes] = (), n: int | None = None, pattern: str = "") -> list[Op]:
    """The warm-up (a structure with delete: its first WARMUP keys inserted and deleted again), then
    PROBE_KEYS inserts of the probe's keys and (with delete) as many deletes in the same order;
    only the first N operations when N is given (the same ones). PATTERN: one of PATTERNS' histories
    instead (no warm-up: it runs after the main one has learnt the ordinary paths)."""
    if pattern:
        keys = pattern_keys(key_kind, reserved)
        ops = [Op("insert", k, probe_value(i, value_size)) for i, k in enumerate(keys)]
        if map_ops is None or "delete" in map_ops:
            ops += [Op("delete", k) for k in (keys[::-1] if "newest" in pattern else keys)]
        return ops if n is None else ops[:n]
    keys = probe_keys(PROBE_KEYS, key_kind, reserved)
    ops = [Op("insert", k, probe_value(i, value_size)) for i, k in enumerate(keys)]
    if map_ops is None or "delete" in map_ops:
        ops = ops[:WARMUP] + [Op("delete", k) for k in keys[:WARMUP]] + ops + [Op("delete", k) for k in keys]
    return ops if n is None else ops[:n]
