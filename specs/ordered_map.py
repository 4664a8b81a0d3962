"""The ordered-map reference model, as data: pure functions over immutable states.

Owns: what each operation of a history does to a map and what it returns, in exactly the result
notation the tree drivers print (docs/trees.md): `ok`, `exists`, `notfound`, `value V`,
`scan K V K V ...`; how a driver dump maps to a state; how a dump that matches no acceptable
state is classed (resurrected-delete, lost-durable-write, torn-update, wrong-value); the
follow-up workload run after recovery. `MODEL` bundles all of it as one crashcheck.specs.model.Model
(registered as `ordered_map` in specs/registry.py). Never runs a structure; the oracle
(specs/oracle.py) compares the two.

Keys and values are bytes. An 8-byte key is shown as a decimal big-endian integer and an 8-byte
value as a decimal little-endian integer; anything else as `x:HEX` (the driver's history syntax).
"""
from __future__ import annotations

import bisect
import functools
import operator
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from crashcheck.specs.model import Mismatch, Model

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


# Memoised: a continuation's model answers print the same keys and values again and again
# (three scans of the whole map per crash point and recovered state), and a decimal conversion
# costs several times a lookup in the cache (bench/README.md, issue 51). Bounded: fuzz runs meet
# fresh keys for hours.
@functools.lru_cache(maxsize=1 << 16)
def key_text(key: bytes) -> str:
    return str(int.from_bytes(key, "big")) if len(key) == 8 else "x:" + key.hex()


@functools.lru_cache(maxsize=1 << 16)
def value_text(value: bytes) -> str:
    return str(int.from_bytes(value, "little")) if len(value) == 8 else "x:" + value.hex()


@functools.lru_cache(maxsize=1 << 16)
def _pair_text(pair: tuple[bytes, bytes]) -> str:
    """A state's (key, value) pair as a scan prints it."""
    return f"{key_text(pair[0])} {value_text(pair[1])}"


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


_pair_key = operator.itemgetter(0)


def step(state: State, op: Op) -> tuple[State, str]:
    """Apply OP; returns the new state and the result line the driver must print."""
    # searched in place: a list of the keys built per step was most of a continuation's replay
    i = bisect.bisect_left(state, op.key, key=_pair_key)
    present = i < len(state) and state[i][0] == op.key
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
        return state, " ".join(["scan", *map(_pair_text, pairs)])
    raise ValueError(f"unknown operation {op.kind!r}")


def run(ops: Iterable[Op], state: State = EMPTY) -> tuple[State, list[str]]:
    """Apply every op in order; returns the final state and every result line."""
    results = []
    for op in ops:
        state, out = step(state, op)
        results.append(out)
    return state, results


def answers(state: State, ops: Iterable[Op]) -> list[str]:
    """run(OPS, STATE)'s result lines, on a working copy instead of a tuple per step: replaying a
    continuation (three scans of the whole map and dozens of inserts) from each recovered state was
    most of the oracle's time per state (bench/README.md, issue 51). The keys stay sorted in a
    list, each with its scan text beside it, so a scan is one join and an insert one list insert."""
    keys = [k for k, _ in state]
    if any(a >= b for a, b in zip(keys, keys[1:])):   # not a map's state (a key twice): as step does
        return run(ops, state)[1]
    vals = dict(state)
    texts = [_pair_text(p) for p in state]
    out = []
    for op in ops:
        kind, key = op.kind, op.key
        if kind == "lookup":
            v = vals.get(key)
            out.append("notfound" if v is None else f"value {value_text(v)}")
        elif kind == "scan":
            i = bisect.bisect_left(keys, key)
            out.append(" ".join(["scan", *texts[i:i + op.count]]))
        elif kind == "insert":
            if key in vals:
                out.append("exists")
                continue
            i = bisect.bisect_left(keys, key)
            keys.insert(i, key)
            texts.insert(i, _pair_text((key, op.value)))
            vals[key] = op.value
            out.append("ok")
        elif kind in ("update", "delete"):
            if key not in vals:
                out.append("notfound")
                continue
            i = bisect.bisect_left(keys, key)
            if kind == "update":
                texts[i] = _pair_text((key, op.value))
                vals[key] = op.value
            else:
                del keys[i], texts[i], vals[key]
            out.append("ok")
        else:
            raise ValueError(f"unknown operation {kind!r}")
    return out


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


# -- the Model record ---------------------------------------------------------------------------

def _step_outcomes(state: State, op: Op) -> list[tuple[str, State]]:
    new, out = step(state, op)
    return [(out, new)]


def dump_state(dump: list[list[str]]) -> State:
    """A driver dump ([["key hex", "value hex"], ...]) as a model state (sorted)."""
    # a list sorted in place: half the time of sorted() over a generator (once per distinct answer)
    fromhex = bytes.fromhex
    pairs = [(fromhex(k), fromhex(v)) for k, v in dump]
    pairs.sort()
    return tuple(pairs)


def parse_dump(text: str) -> State:
    """The driver's `dump K V K V ...` line (after `dump`, as a crash-free run's `--dump` prints
    it: docs/trees.md) as a model state."""
    toks = text.split()
    if len(toks) % 2:
        raise ValueError(f"a dump line with an odd number of tokens: {text[:80]!r}")
    return tuple(sorted((parse_token(k, is_key=True), parse_token(v, is_key=False))
                        for k, v in zip(toks[::2], toks[1::2])))


def state_json(state: State) -> list[list[str]]:
    """A state as bug records show it: [[key, value], ...] in driver notation."""
    return [[key_text(k), value_text(v)] for k, v in state]


def _is_torn(value: bytes, written: set[bytes], unit: int = 8) -> bool:
    """VALUE is made of UNIT-byte pieces of values written to the key (but is none of them)."""
    if len(value) <= unit:
        return False
    pieces = [value[i:i + unit] for i in range(0, len(value), unit)]
    return all(any(w[i * unit:(i + 1) * unit] == p for w in written if len(w) == len(value))
               for i, p in enumerate(pieces))


CLASS_ORDER = ("resurrected-delete", "lost-durable-write", "torn-update", "wrong-value")


def classify(m: Mismatch) -> tuple[str, str]:
    """The class and a one-line explanation of a dump that equals no acceptable state.

    Designing classes: the class names the first thing a person must fix, so a dump that differs
    from the closest acceptable state in several keys is classed by its most telling difference:
    a key that a completed delete removed and that came back (resurrected-delete), then a key or
    value that completed operations made durable and that is gone or older (lost-durable-write),
    then a value mixed from two written values (torn-update), then anything else (wrong-value)."""
    ops, actual = m.ops, m.actual
    states = [s[0] for s in m.states]          # the map is deterministic: one state per prefix
    horizon = m.done + (1 if m.inflight is not None else 0)
    written: dict[bytes, set[bytes]] = {}
    deleted: set[bytes] = set()
    for op in ops[:horizon]:
        if op.kind in ("insert", "update"):
            written.setdefault(op.key, set()).add(op.value)
    for before, after in zip(states[:m.done], states[1:m.done + 1]):
        deleted |= set(dict(before)) - set(dict(after))

    def diffs(state: State) -> list[tuple[str, bytes]]:
        want, got = dict(state), dict(actual)
        out = [("extra", k) for k in got if k not in want]
        out += [("missing", k) for k in want if k not in got]
        out += [("changed", k) for k in want if k in got and want[k] != got[k]]
        return out

    # The closest acceptable state; on a tie, the one that agrees with the dump on which keys are
    # present: a crash inside an insert that kept the new key but lost its value lost the state
    # after the insert (a wrong or older value), not the one before it (a key "never inserted"
    # or "resurrected").
    def distance(state: State) -> tuple[int, int]:
        d = diffs(state)
        return (len(d), sum(1 for what, _ in d if what != "changed"))
    closest = min(m.expected, key=distance)
    want, got = dict(closest), dict(actual)
    best: tuple[str, str] | None = None
    for what, k in diffs(closest):
        ktext = key_text(k)
        if what == "extra":
            if k in deleted and k not in want:
                cand = ("resurrected-delete", f"key {ktext} was deleted by a completed operation "
                        f"but is back with value {value_text(got[k])}")
            else:
                cand = ("wrong-value", f"key {ktext} is present but was never inserted" if k not in written
                        else f"key {ktext} is present (value {value_text(got[k])}) where no acceptable "
                        "state has it")
        elif what == "missing":
            cand = ("lost-durable-write", f"key {ktext} (value {value_text(want[k])}) is missing")
        else:
            older = written.get(k, set()) - {want[k]}
            if got[k] in older:
                cand = ("lost-durable-write", f"key {ktext} has the older value {value_text(got[k])} "
                        f"instead of {value_text(want[k])}")
            elif _is_torn(got[k], written.get(k, set())):
                cand = ("torn-update", f"key {ktext} holds {value_text(got[k])}, torn from written values")
            else:
                cand = ("wrong-value", f"key {ktext} holds {value_text(got[k])}, "
                        f"expected {value_text(want[k])}")
        if best is None or CLASS_ORDER.index(cand[0]) < CLASS_ORDER.index(best[0]):
            best = cand
    assert best is not None, "classify called on a dump equal to an acceptable state"
    return best


def followup(ops: Sequence[Op], key_kind: str = "u64", value_size: int = 8,
             map_ops: Sequence[str] | None = None, **_: Any) -> list[Op]:
    """A short deterministic workload run after every recovery: lookups of the history's keys, an
    insert of a fresh key, an update and a delete of old ones, a lookup and a scan of everything,
    leaving out the operations the structure does not have (MAP_OPS, default all).
    (Was crashcheck.harness.check.pipeline.followup_ops; same operations for the same arguments.)"""
    keys: list[bytes] = []
    for op in ops:
        if op.key not in keys:
            keys.append(op.key)
    if key_kind == "bytes":
        fresh = b"\xfe" + bytes(len(keys) % 7 + 1)
    else:
        top = max((int.from_bytes(k, "big") for k in keys), default=0)
        fresh = ((top + 0x1000) % (1 << 64)).to_bytes(8, "big")
    value = (1 << 20) + 7
    val = value.to_bytes(8, "little") if value_size == 8 else value.to_bytes(value_size, "little")
    val2 = (value + 1).to_bytes(value_size, "little")
    out = [Op("lookup", k) for k in keys[:4]]
    out.append(Op("insert", fresh, val))
    if keys:
        out.append(Op("update", keys[0], val2))
        out.append(Op("delete", keys[-1]))
    out.append(Op("lookup", fresh))
    out.append(Op("scan", b"\0" * (8 if key_kind != "bytes" else 1), count=64))
    return out if map_ops is None else [op for op in out if op.kind in map_ops]


# The targeted part's default number of keys inserted next to the crashed operation's key: past a
# 4-slot node, and a 4-child node (an ART N4) to its next type, whichever side the key lies on.
NEIGHBOURS = 6
# At most this many operations of the rest of the history run after recovery: fuzz's histories
# check at most 10 (harness MAX_OPS), and a long replayed one should not make every check of it
# cost more than twice the short follow-up's (bench/README.md, "Continuation after recovery").
REST_MAX = 12


def continuation(ops: Sequence[Op], done: int, inflight: int | None, key_kind: str = "u64",
                 value_size: int = 8, map_ops: Sequence[str] | None = None,
                 neighbours: int = NEIGHBOURS, rest_max: int = REST_MAX, **_: Any) -> list[Op]:
    """What runs after the recovery of a crash with DONE operations completed and operation
    INFLIGHT in flight (None: between operations), judged by the model from the recovered state:
      1. a lookup of every key the history used that some acceptable state lacks or holds with
         another value (deleted, not inserted yet, or the operation in flight's) and a scan of all
         of it: lookup against the dump in the other direction from the check's own (every dumped
         key looked up), and the scan against both. A key every acceptable state holds (present
         after the DONE operations and not the one in flight's) is in any dump the oracle accepts,
         and the check has looked it up already: it is left out, as are a load phase's keys;
      2. the rest of the history, the operations after the crashed one (they touch the same nodes),
         at most REST_MAX of them;
      3. around the crashed operation's key K: K inserted, looked up, deleted, looked up (a
         transient copy of K that delete leaves behind shows here), inserted, updated, looked up; then
         NEIGHBOURS keys nearest to K in order (sharing its longest prefix) inserted, so the node K
         lives in fills, changes type or splits, K looked up after each; a scan; the neighbours
         deleted again, nearest last (the node shrinks or merges), and a last scan.
    Operations the structure does not have (MAP_OPS) are left out. Values are distinct, none
    taken by the history."""
    keys = list(dict.fromkeys(op.key for op in ops if op.kind != "scan"))   # in order of first use
    width = value_size
    values = iter(range((1 << 20) + 7, 1 << 62))
    used = {op.value for op in ops}

    def value() -> bytes:
        while True:
            v = next(values).to_bytes(8, "little")[:width].ljust(width, b"\0")
            if v not in used:
                used.add(v)
                return v
    low = b"\0" * (8 if key_kind != "bytes" else 1)
    everything = Op("scan", low, count=max(64, 2 * (len(keys) + neighbours + 1)))
    # A key only a load phase used (crashcheck.specs.model.Workload.load) is present and durable in every
    # crash state checked, which all come after the load, and the check looks up every key the
    # dump shows already: looking it up again tells nothing, and after a long load (a capacity
    # crossed) it would be most of the continuation's cost.
    load = getattr(ops, "load", 0)
    checked = {op.key for op in ops[load:] if op.kind != "scan"}
    # The same holds for the keys present at the crash whatever the operation in flight did: a
    # third of a continuation at 100 keys, and most of its cost per state (bench/README.md issue 51)
    settled = _present(ops[:done])
    if inflight is not None and ops[inflight].kind != "scan":
        settled.discard(ops[inflight].key)
    out = [Op("lookup", k) for k in keys if k not in settled and (not load or k in checked)] + [everything]
    start = done if inflight is None else inflight + 1
    out += list(ops[start:start + rest_max])
    crashed = ops[inflight] if inflight is not None else ops[done - 1] if done else None
    k = crashed.key if crashed is not None and crashed.kind != "scan" else (keys[0] if keys else None)
    if k is not None:
        # delete before update: an update may clean up what a delete must clean up on its own
        out += [Op("insert", k, value()), Op("lookup", k), Op("delete", k), Op("lookup", k),
                Op("insert", k, value()), Op("update", k, value()), Op("lookup", k)]
        near = nearest_keys(k, neighbours, key_kind, set(keys))
        for n in near:
            out += [Op("insert", n, value()), Op("lookup", k)]
        if near:
            out.append(everything)
        for n in reversed(near):
            out += [Op("delete", n), Op("lookup", k)]
        out.append(everything)
    return out if map_ops is None else [op for op in out if op.kind in map_ops]


def _present(ops: Sequence[Op]) -> set[bytes]:
    """The keys present after OPS, from an empty map."""
    keys: set[bytes] = set()
    for op in ops:
        if op.kind == "insert":
            keys.add(op.key)
        elif op.kind == "delete":
            keys.discard(op.key)
    return keys


def nearest_keys(key: bytes, n: int, key_kind: str = "u64", taken: set[bytes] | frozenset = frozenset()
                 ) -> list[bytes]:
    """N keys next to KEY in key order, nearest first, alternately above and below it, none in
    TAKEN: an 8-byte integer key's neighbours differ in the last byte (the same leaf node, the same
    ART node); a byte key's share all of it but the last byte, or extend it by one byte."""
    out: list[bytes] = []
    if key_kind != "bytes":
        x = int.from_bytes(key, "big")
        for d in range(1, 4 * n + 2):
            if len(out) >= n:      # the same keys as going on to the end: none more is taken
                break
            for y in (x + d, x - d):
                k = y.to_bytes(8, "big") if 0 <= y < 1 << 64 else None
                if k is not None and k not in taken and k not in out and len(out) < n:
                    out.append(k)
        return out
    last = key[-1] if key else 0
    cands = []
    for d in range(1, 2 * n + 2):
        if key:
            cands += [key[:-1] + bytes([last + d]) if last + d < 256 else None,
                      key[:-1] + bytes([last - d]) if last - d >= 0 else None]
        cands.append(key + bytes([d - 1]) if len(key) < 24 else None)
    for k in cands:
        if k and k not in taken and k not in out and len(out) < n:
            out.append(k)
    return out


def histories(**opts: Any):
    """The Hypothesis strategy of map histories (specs/map_histories.py), imported on first use so
    that reading the model needs no Hypothesis."""
    from crashcheck.specs.map_histories import histories as _histories
    return _histories(**opts)


def contend(draw, ops, start: int, kinds=()):
    """The threaded part of OPS aimed at a few hot keys (specs/map_histories.py `contend`)."""
    from crashcheck.specs.map_histories import contend as _contend
    return _contend(draw, ops, start, kinds)


def validate(op: Op, limits: dict[str, Any]) -> str | None:
    """Why a map structure with LIMITS (key_kind, value_size, value_min) cannot run OP, or None."""
    if op.kind == "scan" and not 1 <= op.count < 1 << 31:
        return "scan count out of range"
    name = limits.get("name", "the structure")
    if op.kind not in limits.get("map_ops", OP_KINDS):
        return f"{name} has no {op.kind}"
    if limits.get("key_kind", "u64") == "u64" and len(op.key) != 8:
        return f"{name} takes 8-byte integer keys"
    size = int(limits.get("value_size", 8))
    low = int(limits.get("value_min", size))
    if op.kind in ("insert", "update") and not low <= len(op.value) <= size:
        return f"{name} takes values of {low}..{size} bytes, not {len(op.value)}"
    return None


MODEL = Model(
    name="ordered_map",
    init=lambda: EMPTY,
    step=_step_outcomes,
    answers=answers,
    parse_op=parse_op,
    op_text=Op.text,
    parse_output=str,           # the drivers print canonical lines: compared as they are
    describe=describe,
    dump_state=dump_state,
    parse_dump=parse_dump,
    state_json=state_json,
    classify=classify,
    classes=CLASS_ORDER,
    followup=followup,
    continuation=continuation,
    histories=histories,
    contend=contend,
    validate=validate,
    doc="ordered map of byte keys to byte values: insert update delete lookup scan",
)
