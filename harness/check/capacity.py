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
inside its checked (not load) operations. A structure that declares thresholds (expect.json) is
never probed: its declaration overrides. Never draws histories (specs/threshold_histories.py
`observed` does, from the points' keys) and never decides what is a bug.
"""
from __future__ import annotations

from dataclasses import dataclass

from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import NO_SITE, Trace
from crashcheck.specs.capacity_probe import MAX_POINT, probe_history

KIND_WARMUP = 8         # operations of a kind that only learn its ordinary path
# Lines the probe's run may leave pending at its end, under the run's persistency model, for its
# points to be kept: a structure that leaves lines pending across operations (Heart, which issues
# no flushes, under x86-ADR) keeps every line a load wrote pending at every crash point of the
# checked part, and each checked state costs time in proportion (one history loaded to 125 keys
# ran for 20 minutes, one to 32 keys took 3x a plain history). Such a run gets no points: its
# plain histories' bulk loads (17-48 keys) still come.
PENDING_MAX = 64
MAX_POINTS = 4          # points kept per direction, the smallest first
STORES = ("store", "ntstore")


@dataclass(frozen=True)
class CapacityPoint:
    on: str                 # "insert" (the structure grows past KEYS) or "delete" (shrinks from KEYS)
    keys: int               # keys the structure held just before the crossing operation
    index: int              # that operation's index in the probe's history
    marks: frozenset        # what the operation did first (op_marks): crossing it shows these
    where: str              # the first new store's site, in words

    @property
    def label(self) -> str:
        return f"{self.on} at {self.keys} keys ({self.where})" if self.where else f"{self.on} at {self.keys} keys"

    def as_json(self) -> dict:
        return {"on": self.on, "keys": self.keys, "where": self.where}


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


def points(ops: list, marks: dict[int, set], trace: Trace | None = None) -> list[CapacityPoint]:
    """The capacity points of the probe's history OPS, traced as MARKS (op_marks): per direction,
    the first MAX_POINTS operations past each kind's warm-up that did something no earlier
    operation of their kind did, at MAX_POINT keys at most."""
    seen: dict[str, set] = {}
    done: dict[str, int] = {}
    present = 0
    out: list[CapacityPoint] = []
    for i, op in enumerate(ops):
        kind = op.kind
        m = marks.get(i, set())
        new = m - seen.setdefault(kind, set())
        seen[kind] |= m
        done[kind] = done.get(kind, 0) + 1
        if (new and done[kind] > KIND_WARMUP and kind in ("insert", "delete") and 0 < present <= MAX_POINT
                and sum(p.on == kind for p in out) < MAX_POINTS):
            out.append(CapacityPoint(kind, present, i, frozenset(new), _where(new, trace)))
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


def observe(checker, deadline: float | None = None) -> list[CapacityPoint]:
    """The capacity points of CHECKER's structure, from one traced crash-free run of the probe's
    history, ended at DEADLINE (time.monotonic()) if it is not done; none for a structure that
    declares thresholds, is not a map, or whose probe run fails or runs out of time (the fuzz run
    finds out why on its own)."""
    s = checker.structure
    if s.thresholds or checker.model.name != "ordered_map" or not s.has_pm:
        return []
    ops = probe_history(s.key_kind, s.value_size, s.map_ops, s.reserved_keys)
    try:
        trace, _lines = checker.trace(ops, deadline)
    except Exception:      # noqa: BLE001 - a failing probe only means no points are known
        return []
    out = points(ops, op_marks(trace), trace)
    if out and pending_at_end(trace, checker.settings.options()) > PENDING_MAX:
        return []
    return out


def pending_at_end(trace: Trace, options) -> int:
    """Lines the traced run leaves pending at its last crash point under OPTIONS' model."""
    sim = Simulator.from_trace(trace, options)
    last = sim.count_crash_points() - 1
    end = None
    for cp in sim.crash_points(wanted=lambda i: i == last):
        end = cp
    return len(end.pending_lines) if end is not None else 0


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
    return [p for p in pts if p.marks & done.get(p.on, set())]


__all__ = ["CapacityPoint", "crossed", "observe", "op_marks", "points"]
