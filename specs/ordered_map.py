"""The ordered-map reference model, as data: pure functions over immutable states.

Owns: what each operation of a history does to a map and what it returns, in exactly the result
notation the tree drivers print (docs/trees.md): `ok`, `exists`, `notfound`, `value V`,
`scan K V K V ...`. Never runs a structure; the oracle (specs/oracle.py) compares the two.

Keys and values are bytes. An 8-byte key is shown as a decimal big-endian integer and an 8-byte
value as a decimal little-endian integer; anything else as `x:HEX` (the driver's history syntax).
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Iterable

OP_KINDS = ("insert", "update", "delete", "lookup", "scan")
MUTATING = frozenset({"insert", "update", "delete"})


@dataclass(frozen=True)
class Op:
    kind: str
    key: bytes
    value: bytes = b""
    count: int = 0          # scan only: how many pairs at most

    def text(self) -> str:
        """The op as a history line the drivers read."""
        k = key_text(self.key)
        if self.kind in ("insert", "update"):
            return f"{self.kind} {k} {value_text(self.value)}"
        if self.kind == "scan":
            return f"scan {k} {self.count}"
        return f"{self.kind} {k}"


def key_text(key: bytes) -> str:
    return str(int.from_bytes(key, "big")) if len(key) == 8 else "x:" + key.hex()


def value_text(value: bytes) -> str:
    return str(int.from_bytes(value, "little")) if len(value) == 8 else "x:" + value.hex()


def parse_token(tok: str, *, is_key: bool) -> bytes:
    """Inverse of key_text / value_text."""
    if tok.startswith("x:"):
        return bytes.fromhex(tok[2:])
    return int(tok).to_bytes(8, "big" if is_key else "little")


def parse_op(line: str) -> Op:
    parts = line.split()
    kind = parts[0]
    if kind not in OP_KINDS:
        raise ValueError(f"unknown operation {kind!r}")
    key = parse_token(parts[1], is_key=True)
    if kind in ("insert", "update"):
        return Op(kind, key, parse_token(parts[2], is_key=False))
    if kind == "scan":
        return Op(kind, key, count=int(parts[2]))
    return Op(kind, key)


# A state is an immutable, sorted tuple of (key, value) pairs: hashable, comparable, cheap to
# compare with a structure's dump (which is in key order too).
State = tuple[tuple[bytes, bytes], ...]
EMPTY: State = ()


def step(state: State, op: Op) -> tuple[State, str]:
    """Apply OP; returns the new state and the result line the driver must print."""
    keys = [k for k, _ in state]
    i = bisect.bisect_left(keys, op.key)
    present = i < len(keys) and keys[i] == op.key
    if op.kind == "insert":
        if present:
            return state, "exists"
        return state[:i] + ((op.key, op.value),) + state[i:], "ok"
    if op.kind == "update":
        if not present:
            return state, "notfound"
        return state[:i] + ((op.key, op.value),) + state[i + 1:], "ok"
    if op.kind == "delete":
        if not present:
            return state, "notfound"
        return state[:i] + state[i + 1:], "ok"
    if op.kind == "lookup":
        return state, (f"value {value_text(state[i][1])}" if present else "notfound")
    if op.kind == "scan":
        pairs = state[i:i + op.count]
        return state, " ".join(["scan"] + [f"{key_text(k)} {value_text(v)}" for k, v in pairs])
    raise ValueError(f"unknown operation {op.kind!r}")


def run(ops: Iterable[Op], state: State = EMPTY) -> tuple[State, list[str]]:
    """Apply every op in order; returns the final state and every result line."""
    results = []
    for op in ops:
        state, out = step(state, op)
        results.append(out)
    return state, results


def prefix_states(ops: list[Op]) -> list[State]:
    """states[i] = the map after ops 0..i-1 (states[0] is empty; len = len(ops) + 1)."""
    states = [EMPTY]
    for op in ops:
        states.append(step(states[-1], op)[0])
    return states


def describe(state: State, limit: int = 12) -> str:
    items = [f"{key_text(k)}={value_text(v)}" for k, v in state[:limit]]
    more = f", ... ({len(state)} pairs)" if len(state) > limit else ""
    return "{" + ", ".join(items) + more + "}"
