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


def probe_history(key_kind: str = "u64", value_size: int = 8, map_ops: Sequence[str] | None = None,
                  reserved: Sequence[bytes] = (), n: int | None = None) -> list[Op]:
    """PROBE_KEYS inserts of the probe's keys, then (a structure with delete) as many deletes in the
    same order; only the first N operations when N is given (the same ones)."""
    keys = probe_keys(PROBE_KEYS, key_kind, reserved)
    ops = [Op("insert", k, probe_value(i, value_size)) for i, k in enumerate(keys)]
    if map_ops is None or "delete" in map_ops:
        ops += [Op("delete", k) for k in keys]
    return ops if n is None else ops[:n]
