"""The functional tests' reference for an ordered-map tree: a dict fed the driver's own lines
(`insert K V`, `scan K N`, ...), answering the line the driver must print, and what the driver's
`check` must report of the pool. Crash tests judge with specs/ instead (tests/crashutil.py).

One model for every key shape: keys and values are kept as the bytes the driver stores (a u64 key
big-endian, so byte order is number order; a u64 value little-endian), and written in the driver's
notation: an 8-byte key or value as a decimal, anything else as x:HEX. So a u64 tree's lines are
plain numbers, and HART's and Heart's byte-string keys (1..24 bytes) use the same model.
Also here: the byte-string histories the HART and Heart functional tests share.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from treeutil import run_driver

VSIZE = 16          # the largest value of the byte-string trees (HART, Heart)


def tok(b: bytes) -> str:
    """A key in driver notation: 8 bytes as a (big-endian) decimal, anything else as x:HEX."""
    return str(int.from_bytes(b, "big")) if len(b) == 8 else "x:" + b.hex()


def vtok(b: bytes) -> str:
    """A value in driver notation: 8 bytes as a (little-endian) decimal, anything else as x:HEX."""
    return str(int.from_bytes(b, "little")) if len(b) == 8 else "x:" + b.hex()


def _bytes(token: str, order: str) -> bytes:
    return bytes.fromhex(token[2:]) if token.startswith("x:") else int(token).to_bytes(8, order)


@dataclass
class Model:
    """An ordered map of byte strings (keys -> values as stored), and the result line of each
    operation."""
    data: dict[bytes, bytes] = field(default_factory=dict)

    def apply(self, line: str) -> str:
        op, *args = line.split()
        key = _bytes(args[0], "big")
        if op == "insert":
            if key in self.data:
                return "exists"
            self.data[key] = _bytes(args[1], "little")
            return "ok"
        if op == "update":
            if key not in self.data:
                return "notfound"
            self.data[key] = _bytes(args[1], "little")
            return "ok"
        if op == "delete":
            return "ok" if self.data.pop(key, None) is not None else "notfound"
        if op == "lookup":
            return f"value {vtok(self.data[key])}" if key in self.data else "notfound"
        if op == "scan":
            found = sorted(k for k in self.data if k >= key)[: int(args[1])]
            return " ".join(["scan"] + [f"{tok(k)} {vtok(self.data[k])}" for k in found])
        raise AssertionError(op)

    def keys(self) -> list[str]:
        """The keys held, in driver notation, in the order they were inserted."""
        return [tok(k) for k in self.data]

    def dump_line(self) -> str:
        """The last line of `driver run --dump`."""
        return " ".join(["dump"] + [f"{tok(k)} {vtok(v)}" for k, v in sorted(self.data.items())])

    def dump(self) -> list[list[str]]:
        """The "dump" of `driver check`: [key hex, value hex] in key order."""
        return [[k.hex(), v.hex()] for k, v in sorted(self.data.items())]


def check_pool(driver: Path, pool: Path, model: Model, *args: str) -> dict:
    """`driver check` of POOL (ARGS: more options) reports a recovered tree, no violation, nothing
    unreachable, and the model's contents; returns its JSON."""
    res = run_driver(driver, ["check", "--pool", str(pool), *args])
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["recovered"] is True, result
    assert result["violations"] == []
    assert result["unreachable"] == []
    assert result["dump"] == model.dump()
    return result


# -- byte-string histories (HART, Heart) ---------------------------------------------------------

def line(op: tuple) -> str:
    """An operation (kind, key bytes, [value bytes | scan count]) as a driver line."""
    kind, key, *rest = op
    if kind in ("insert", "update"):
        return f"{kind} {tok(key)} {vtok(rest[0])}"
    if kind == "scan":
        return f"scan {tok(key)} {rest[0]}"
    return f"{kind} {tok(key)}"


def key_pool(rng: random.Random, n: int, prefixes: int) -> list[bytes]:
    """Keys of 1..24 bytes over a few hash keys, many sharing longer prefixes, some shorter than 2."""
    heads = [bytes([rng.randrange(256), rng.randrange(256)]) for _ in range(prefixes)]
    keys: set[bytes] = {bytes([rng.randrange(4)]) for _ in range(3)}
    while len(keys) < n:
        base = rng.choice(heads)
        if rng.random() < 0.5 and keys:
            base = rng.choice(sorted(keys))[: rng.randrange(1, 25)]
        tail = bytes(rng.randrange(4) for _ in range(rng.randrange(0, 24 - len(base) + 1)))
        k = (base + tail)[:24]
        if k:
            keys.add(k)
    return sorted(keys)


def history(rng: random.Random, keys: list[bytes], n: int) -> list[tuple]:
    ops = []
    for _ in range(n):
        r, k = rng.random(), rng.choice(keys)
        v = bytes(rng.randrange(256) for _ in range(rng.choice((8, 16, rng.randrange(1, VSIZE + 1)))))
        if r < 0.45:
            ops.append(("insert", k, v))
        elif r < 0.6:
            ops.append(("update", k, v))
        elif r < 0.8:
            ops.append(("delete", k))
        elif r < 0.95:
            ops.append(("lookup", k))
        else:
            ops.append(("scan", rng.choice(keys)[: rng.randrange(1, 25)], rng.randrange(0, 8)))
    return ops


def check_history_then_drain(driver: Path, pool: Path, rng: random.Random, keys: list[bytes], n: int) -> None:
    """A byte-string tree (HART, Heart) against the model: N random operations on a new pool with
    the tree's own check after each, the pool checked; then reopened (recovery rebuilds the DRAM
    side), N/4 more operations, every key deleted and a scan: every chunk goes back, only the meta
    object stays allocated."""
    ops = history(rng, keys, n)
    model = Model()
    expected = [model.apply(line(op)) for op in ops]
    res = run_driver(driver, ["run", "--pool", str(pool), "--create", "--size", "64m", "--check"],
                     "\n".join(line(op) for op in ops))
    assert res.returncode == 0, res.stderr
    got = res.stdout.splitlines()
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"op {i} ({line(ops[i])}): driver said {g!r}, model {e!r}"
    assert len(got) == len(expected)
    check_pool(driver, pool, model)

    more = history(rng, keys, n // 4)
    rest = more + [("delete", k) for k in sorted(keys, key=lambda _: rng.random())] + [("scan", b"\0", 5)]
    exp = [model.apply(line(op)) for op in rest]
    res = run_driver(driver, ["run", "--pool", str(pool), "--check"], "\n".join(line(op) for op in rest))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == exp
    result = check_pool(driver, pool, model)
    assert len(result["allocated"]) == 1, "only the meta object stays once every key is gone"


def check_short_keys_and_prefixes(driver: Path, pool: Path) -> None:
    """Keys shorter than HART's hash key, keys that are prefixes of others, and 8-byte keys,
    against the model on a new pool, the pool checked after."""
    keys = [b"a", b"a\0", b"a\0\0", b"ab", b"abc", b"abcd", b"\0", b"\0\0", b"ab" + b"\xff" * 22,
            (5).to_bytes(8, "big"), b"b"]
    model = Model()
    ops = [("insert", k, bytes([i]) * VSIZE) for i, k in enumerate(keys)]
    ops += [("lookup", k) for k in keys] + [("scan", b"\0", 100), ("scan", b"ab", 3)]
    ops += [("delete", b"a\0"), ("lookup", b"a"), ("lookup", b"a\0\0"), ("update", b"ab", b"\x42" * VSIZE),
            ("scan", b"a", 100)]
    expected = [model.apply(line(op)) for op in ops]
    res = run_driver(driver, ["run", "--pool", str(pool), "--create", "--size", "4m"],
                     "\n".join(line(op) for op in ops))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == expected
    check_pool(driver, pool, model)
