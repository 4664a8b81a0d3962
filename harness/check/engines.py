"""pmreorder's engine configuration in program mode: which states each marked section of a run
gets checked, and the markers a checker is told (docs/from-pmreorder.md#engines).

Owns the engine names, reading them as pmreorder takes them (`-x NAME=ENGINE[,NAME=ENGINE]`, or a
JSON file of marker name -> engine; `-r ENGINE` for everywhere else), the walk of a run's markers
that says which engine is in force at each event (sections nest: a section with no engine of its
own keeps its enclosing one, its END restores the enclosing one), the `PMREORDER_MARKERS` value a
checker gets (the markers emitted before the crash, joined by '|', as pmreorder sets it), and the
states an engine picks at one crash point. Never runs a command (program_check.py) or walks the
crash points (program_explore.py).
"""
from __future__ import annotations

import bisect
import json
import os
from dataclasses import dataclass

from crashcheck.crashsim.simulate import CrashPoint
from crashcheck.harness.core.errors import UsageError

ENGINES = ("NoReorderNoCheck", "NoReorderDoCheck", "ReorderFull", "ReorderPartial",
           "ReorderAccumulative", "ReorderReverseAccumulative")
# pmreorder's default engine outside configured sections (its -r default)
PMREORDER_DEFAULT = "NoReorderNoCheck"
# what each engine is checked with: a strategy of ours, or an engine-specific list of states
STRATEGY = {"ReorderFull": "lazy", "ReorderPartial": "bounded", "NoReorderDoCheck": "in-order",
            "ReorderAccumulative": "prefixes", "ReorderReverseAccumulative": "suffixes",
            "NoReorderNoCheck": "unchecked"}
ENV = "PMREORDER_MARKERS"


def _engine(name: str, where: str) -> str:
    if name not in ENGINES:
        raise UsageError(f"{where}: unknown engine {name!r} (pmreorder's engines: {', '.join(ENGINES)})")
    return name


def parse_markers(values: list[str]) -> dict[str, str]:
    """The -x values (each a JSON config file's path, or NAME=ENGINE pairs separated by commas,
    as pmreorder reads its -x) as one marker name -> engine map, later values winning."""
    out: dict[str, str] = {}
    for value in values:
        if os.path.isfile(value):
            try:
                loaded = json.loads(open(value, encoding="utf-8").read())
            except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
                raise UsageError(f"-x {value}: not a JSON config file ({exc})") from None
            if not isinstance(loaded, dict) or not all(isinstance(k, str) and isinstance(v, str)
                                                       for k, v in loaded.items()):
                raise UsageError(f"-x {value}: the config must be a JSON object of marker name -> engine name")
            pairs = list(loaded.items())
        else:
            pairs = []
            for pair in value.split(","):
                name, eq, engine = pair.partition("=")
                if not eq or not name:
                    raise UsageError(f"-x {value!r}: give MARKER=ENGINE[,MARKER=ENGINE...] or a JSON config file")
                pairs.append((name, engine))
        for name, engine in pairs:
            out[name] = _engine(engine, f"-x {name}")
    return out


@dataclass(frozen=True)
class EngineConfig:
    """Marker name -> engine, and the engine everywhere no configured section is open."""
    markers: dict[str, str]
    default: str

    @staticmethod
    def from_options(x_values: list[str] | None, default: str | None) -> "EngineConfig | None":
        """None when neither -x nor -r was given (the run's --strategy applies everywhere)."""
        if not x_values and default is None:
            return None
        return EngineConfig(parse_markers(x_values or []),
                            _engine(default, "-r") if default is not None else PMREORDER_DEFAULT)

    def uses(self, strategy: str) -> bool:
        return any(STRATEGY[e] == strategy for e in (self.default, *self.markers.values()))


def marker_name(text: str) -> str:
    """A marker's section name as pmreorder keys its config: the text before the first '.'."""
    return text.partition(".")[0]


class Sections:
    """A run's pmreorder markers, (event index, text) in trace order, walked once: the engine in
    force and the markers emitted before any event."""

    def __init__(self, markers: list[tuple[int, str]], config: EngineConfig | None,
                 stores: list[int] | None = None) -> None:
        self.index = [i for i, _ in markers]
        self.stores = stores or []              # the run's store events (indices), in order
        self.joined: list[str] = []             # PMREORDER_MARKERS after each marker
        self.engine: list[str | None] = []      # the engine in force after each marker
        stack: list[tuple[str, str | None]] = [("", config.default if config else None)]
        seen: list[str] = []
        for _, text in markers:
            seen.append(text)
            self.joined.append("|".join(seen))
            name = marker_name(text)
            if text.endswith(".BEGIN"):
                engine = config.markers.get(name) if config else None
                stack.append((name, engine or stack[-1][1]))
            elif text.endswith(".END"):
                # the latest open section of that name ends (pmreorder refuses crossed sections)
                at = next((k for k in range(len(stack) - 1, 0, -1) if stack[k][0] == name), None)
                if at is not None:
                    del stack[at]
            self.engine.append(stack[-1][1])
        self.default = config.default if config else None
        self.configured = config is not None   # pmreorder's engines were given (-x / -r)

    def _last(self, event: int) -> int:
        """How many markers came before EVENT."""
        return bisect.bisect_left(self.index, event)

    def env(self, event: int) -> dict[str, str]:
        """The checker's PMREORDER_MARKERS at a crash before EVENT (len(events): after the run);
        {} for a run that emitted no marker."""
        if not self.index:
            return {}
        n = self._last(event)
        return {ENV: self.joined[n - 1] if n else ""}

    def engine_at(self, event: int) -> str | None:
        """The engine in force at a crash before EVENT; None when no engine was configured."""
        n = self._last(event)
        return self.engine[n - 1] if n else self.default

    def engine_for(self, event: int, settled: bool) -> str | None:
        """The engine that checks a crash before EVENT. SETTLED: nothing is pending there, so its one
        state is every store so far persisted. pmreorder checks such a state only as the start of the
        next store set it replays (each engine's first sequence applies none of the set's stores) or
        as the end of the previous one, which the previous crash point's states already include:
        the engine in force at the next store decides (a state between two NoReorderNoCheck sections,
        which a program may leave inconsistent on purpose, is not checked)."""
        if settled:
            k = bisect.bisect_left(self.stores, event)
            if k < len(self.stores):
                return self.engine_at(self.stores[k])
        return self.engine_at(event)


def store_events(trace) -> list[int]:
    """The indices of TRACE's store events (plain and non-temporal), for Sections."""
    return [i for i, ev in enumerate(trace.events) if ev.kind in ("store", "ntstore")]


def repeated_by_next(events, cp: CrashPoint, sections: Sections) -> bool:
    """CP is an operation boundary (a marker), the next crash point comes before any store or
    flush (so it has the same states, its commands told more markers) and checks them with the
    same engine. pmreorder tells a checker the markers emitted up to the store set it replays,
    never those of a boundary in between, so only the last of such a run of points is checked."""
    if cp.kind not in ("op_begin", "op_end"):
        return False
    nxt = len(events)                   # the end of the trace is the next point
    for i in range(cp.event + 1, len(events)):
        kind = events[i].kind
        if kind in ("store", "ntstore", "flush"):
            return False
        if kind in ("fence", "op_begin", "op_end"):
            nxt = i
            break
    # a settled point takes the next store's engine, as the next point then does
    return not cp.units or sections.engine_at(nxt) == sections.engine_at(cp.event)


def _prefix_states(cp: CrashPoint) -> dict[tuple[int, ...], None]:
    """The legal states keeping, for each pending store (a seq: the pieces of one store together),
    it and every store before it in program order; built by adding one store at a time, each unit's
    choice kept up to date (a memset's unordered pieces looked up among its orders), so the cost is
    the stores plus the states written out, not stores x units x orders."""
    units = cp.units
    by_seq: dict[int, list[tuple[int, int]]] = {}
    for j, u in enumerate(units):
        for i, p in enumerate(u.pieces):
            by_seq.setdefault(p.seq, []).append((j, i))
    index = [None if u.orders is None else {order: c for c, order in enumerate(u.orders)} for u in units]
    kept: list[list[int]] = [[] for _ in units]
    choice: list[int | None] = [0] * len(units)
    illegal = 0                 # units whose kept pieces are no legal choice of theirs
    out = {tuple(choice): None}
    for seq in sorted(by_seq):
        touched = []
        for j, i in by_seq[seq]:
            kept[j].append(i)
            if j not in touched:
                touched.append(j)
        for j in touched:
            ks = sorted(kept[j])
            if index[j] is None:    # a prefix of the line's pieces, or nothing legal
                c = len(ks) if ks[-1] == len(ks) - 1 else None
            else:
                c = index[j].get(tuple(ks))
            illegal += (c is None) - (choice[j] is None)
            choice[j] = c
        if not illegal:
            out[tuple(choice)] = None    # type: ignore[index]
    return out


def _suffix_states(cp: CrashPoint) -> dict[tuple[int, ...], None]:
    """For each pending store from the last back, the state keeping every line whose pending stores
    all come at or after it whole (a line keeping a later store without an earlier one cannot
    happen on x86), the other lines nothing."""
    units = cp.units
    first = [min(p.seq for p in u.pieces) for u in units]
    by_first: dict[int, list[int]] = {}
    for j, s in enumerate(first):
        by_first.setdefault(s, []).append(j)
    choice = [0] * len(units)
    out = {tuple(choice): None}
    for seq in sorted({p.seq for u in units for p in u.pieces}, reverse=True):
        for j in by_first.get(seq, ()):
            choice[j] = units[j].choices - 1
        out[tuple(choice)] = None
    return out


def engine_states(cp: CrashPoint, how: str) -> list[tuple[int, ...]]:
    """The states HOW ("in-order", "prefixes", "suffixes") checks at CP, no repeats.

    in-order: every pending store persisted, in program order (the state a crash-free run reaches).
    prefixes: for each k, the first k pending stores in program order persisted (each is legal).
    suffixes: for each k, the last k pending stores persisted, as far as a cache line allows: a
    line keeps its pending stores only when all of them are among the last k (a line keeping a
    later store without an earlier one cannot happen on x86, so that state is not checked)."""
    if how == "in-order":
        return [tuple(u.choices - 1 for u in cp.units)]
    return list(_prefix_states(cp) if how == "prefixes" else _suffix_states(cp))


__all__ = ["ENGINES", "ENV", "EngineConfig", "PMREORDER_DEFAULT", "STRATEGY", "Sections", "engine_states",
           "marker_name", "parse_markers", "repeated_by_next", "store_events"]
