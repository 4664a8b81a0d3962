"""Capacity points a structure crosses without declaring them (issue 33, pattern 4).

Owns the capacity probe's reading: one traced crash-free run of specs/capacity_probe.py's history
(keys inserted one by one, then deleted one by one) and, per operation, what it did that no
earlier operation of its kind did: a store from a code site never run before, an allocation from a
new site or of a new size class (sizes in powers of two), a free from a new site. Such an operation
is where the structure's path changes as it grows (a node splits or changes type) or shrinks (a
node empties, merges, the root goes back), and the number of keys the structure held just before
it is the capacity crossed. The first KIND_WARMUP operations of each kind only learn its ordinary
path; a capacity below that is crossed inside the checked part of plain histories already.

Also owns `crossed`: which points a checked history crossed, told by the same new sites firing
inside its checked (not load) operations. A structure that declares thresholds (expect.json) gets
those as its points (`declared`), read from the same probe run: the probe's insert of key C + 1. Never draws histories (specs/threshold_histories.py
`observed` does, from the points' keys) and never decides what is a bug.
"""
from __future__ import annotations

from dataclasses import dataclass

from crashcheck.crashsim.trace import NO_SITE, Trace
from crashcheck.specs.capacity_probe import MAX_POINT, PATTERNS, PROBE_KEYS, WARMUP, probe_history

KIND_WARMUP = WARMUP    # operations of a kind that only learn its ordinary path (the probe's warm-up)
MAX_POINTS = 5          # points kept per direction (and per pattern), the first the probe meets
STORES = ("store", "ntstore")


@dataclass(frozen=True)
class CapacityPoint:
    on: str                 # "insert" (the structure grows past KEYS) or "delete" (shrinks from KEYS)
    keys: int               # keys the structure held just before the crossing operation
    index: int              # that operation's index in the probe's history
    marks: frozenset        # what the operation did first (op_marks): crossing it shows these
    where: str              # the first new store's site, in words
    declared: bool = False  # a threshold of expect.json (with no marks: crossed by the keys held)
    why: str = ""           # why no history can cross it in this run (the point is listed, not drawn)
    pattern: str = ""       # the probe's pattern of colliding keys that reached it (capacity_probe.PATTERNS)

    @property
    def label(self) -> str:
        said = "; ".join(x for x in ("declared" if self.declared else "", self.pattern, self.where) if x)
        return f"{self.on} at {self.keys} keys ({said})" if said else f"{self.on} at {self.keys} keys"

    def as_json(self) -> dict:
        return {"on": self.on, "keys": self.keys, "where": self.where, "declared": self.declared,
                "pattern": self.pattern}

    @property
    def drawn(self) -> tuple:
        """The point as threshold_histories.observed draws histories that cross it."""
        return (self.on, self.keys, self.index, self.pattern)


def op_marks(trace: Trace) -> dict[int, set]:
    """Per operation index of TRACE, what it did that can mark a path: ("store", site) per store
    site, ("alloc", site, size class) per allocation, ("free", site) per free."""
    out: dict[int, set] = {}
    cur: set | None = None
    for ev in trace.events:
        if ev.kind == "op_begin":
            cur = out.setdefault(ev.addr, set())
        elif ev.kind == "op_end":
            cur = None
        elif cur is None or ev.site == NO_SITE:
            continue
        elif ev.kind in STORES:
            cur.add(("store", ev.site))
        elif ev.kind == "alloc":
            cur.add(("alloc", ev.site, max(ev.size, 1).bit_length()))
        elif ev.kind == "free":
            cur.add(("free", ev.site))
    return out


def points(ops: list, marks: dict[int, set], trace: Trace | None = None, learnt: dict | None = None,
           pattern: str = "") -> list[CapacityPoint]:
    """The capacity points of the probe's history OPS, traced as MARKS (op_marks): per direction,
    the first MAX_POINTS operations past each kind's warm-up that did something no earlier
    operation of their kind did, at MAX_POINT keys at most. LEARNT (kind -> marks): what the
    main history's operations did, for a PATTERN's history (no warm-up then); it is updated."""
    seen: dict[str, set] = learnt if learnt is not None else {}
    done: dict[str, int] = {kind: KIND_WARMUP for kind in seen}
    present = 0
    out: list[CapacityPoint] = []
    for i, op in enumerate(ops):
        kind = op.kind
        m = marks.get(i, set())
        new = m - seen.setdefault(kind, set())
        seen[kind] |= m
        done[kind] = done.get(kind, 0) + 1
        # (a delete point may lie at any size: the deletes that follow shrink the structure)
        if (new and done[kind] > KIND_WARMUP and kind in ("insert", "delete")
                and 0 < present <= (MAX_POINT if kind == "insert" else PROBE_KEYS)
                and sum(p.on == kind for p in out) < MAX_POINTS):
            out.append(CapacityPoint(kind, present, i, frozenset(new), _where(new, trace), pattern=pattern))
        present += 1 if kind == "insert" else -1 if kind == "delete" else 0
    return out


def _where(new: set, trace: Trace | None) -> str:
    """The source line of the first new store (or allocation) of NEW, for the report."""
    if trace is None:
        return ""
    for mark in sorted(new, key=lambda m: (m[0] != "store", m[0] != "alloc", m[1])):
        site = trace.site(mark[1])
        if site is not None and site.line:
            return f"{site.file.rsplit('/', 1)[-1]}:{site.line} in {site.func}"
    return ""


def declared(thresholds, ops: list, marks: dict[int, set], trace: Trace | None) -> list[CapacityPoint]:
    """The points of declared THRESHOLDS (expect.json keys), one insert point each at the probe's
    operation that inserts key C + 1 (OPS, traced as MARKS): marked by what it did that no earlier
    insert did, when it did something new (a chunk chained by a new store), else crossed by the
    keys a checked insert finds (C before it)."""
    out = []
    present, before, held = 0, set(), {}
    for i, op in enumerate(ops):      # the last insert into C keys: past the warm-up
        if op.kind == "insert":
            held[present] = (i, frozenset(before))
            before |= marks.get(i, set())
        present += 1 if op.kind == "insert" else -1 if op.kind == "delete" else 0
    for cap in sorted(set(thresholds)):
        if cap in held:
            i, seen = held[cap]
            new = frozenset(marks.get(i, set()) - seen)
            out.append(CapacityPoint("insert", cap, i, new, _where(new, trace), declared=True))
    return out


def observe(checker, deadline: float | None = None) -> list[CapacityPoint]:
    """The capacity points of CHECKER's structure, from one traced crash-free run of the probe's
    history, ended at DEADLINE (time.monotonic()) if it is not done: its declared thresholds'
    (declared) or else the observed ones (points); none for a structure that is not a map, or
    whose probe run fails or runs out of time (the fuzz run finds out why on its own). A point no
    history can cross cheaply carries its reason (`why`)."""
    s = checker.structure
    if checker.model.name != "ordered_map" or not s.has_pm:
        return []
    ops = probe_history(s.key_kind, s.value_size, s.map_ops, s.reserved_keys)
    try:
        trace, _lines = checker.trace(ops, deadline)
    except Exception:      # noqa: BLE001 - a failing probe only means no points are known
        return [CapacityPoint("insert", k, k, frozenset(), "", declared=True,
                              why="the probe's run failed or ran out of time") for k in sorted(set(s.thresholds))]
    marks = op_marks(trace)
    learnt: dict[str, set] = {}
    out = declared(s.thresholds, ops, marks, trace) if s.thresholds else points(ops, marks, trace, learnt)
    if not s.thresholds:
        out += _patterns(checker, learnt, deadline)
    # (a structure that leaves lines pending across operations, Heart under x86-ADR, costs no
    # more to cross: a history's load is never traced, its trace starts from the pool at the
    # load's end, harness/check/traced_run.py, so no load line is pending in a checked state)
    return out


def _patterns(checker, learnt: dict[str, set], deadline: float | None) -> list[CapacityPoint]:
    """The points the probe's patterns of colliding keys (capacity_probe.PATTERNS) reach that the
    main history did not: each pattern traced on a fresh structure, judged against what the main
    history's operations LEARNT (updated). A pattern whose run fails gives none."""
    s = checker.structure
    out: list[CapacityPoint] = []
    for pattern in PATTERNS:
        ops = probe_history(s.key_kind, s.value_size, s.map_ops, s.reserved_keys, pattern=pattern)
        try:
            trace, _lines = checker.trace(ops, deadline)
        except Exception:      # noqa: BLE001 - a structure that cannot hold the pattern
            continue
        out += points(ops, op_marks(trace), trace, learnt, pattern)
    return out


def crossed(pts: list[CapacityPoint], ops: list, trace: Trace | None, load: int) -> list[CapacityPoint]:
    """The points of PTS the history OPS, traced as TRACE, crossed inside its checked part
    (operations from LOAD on): one of its operations of the point's kind did what the probe's
    crossing operation did first (an insert running a delete's new path is no crossing)."""
    if not pts or trace is None:
        return []
    done: dict[str, set] = {}
    for i, m in op_marks(trace).items():
        if load <= i < len(ops):
            done.setdefault(getattr(ops[i], "kind", ""), set()).update(m)
    held = _inserts_at(ops, load) if any(not p.marks for p in pts) else set()
    return [p for p in pts if (p.marks & done.get(p.on, set()) if p.marks else p.on == "insert" and p.keys in held)]


def _inserts_at(ops: list, load: int) -> set[int]:
    """The numbers of keys a map held before each checked insert of a new key in OPS (from LOAD on)."""
    present: set = set()
    out = set()
    for i, op in enumerate(ops):
        kind, key = getattr(op, "kind", ""), getattr(op, "key", None)
        if kind == "insert" and key not in present:
            if i >= load:
                out.add(len(present))
            present.add(key)
        elif kind == "delete":
            present.discard(key)
    return out


__all__ = ["CapacityPoint", "crossed", "declared", "observe", "op_marks", "points"]
