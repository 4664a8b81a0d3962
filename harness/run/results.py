"""What a fuzz run returns, typed: its counts (Stats), its progress reports (Progress), the examples
a search keeps (Entry), one target's result (TargetResult) and a whole run's (Results), which
also turns itself into the results file (docs/bug-record.md).

Owns these types and their JSON forms, nothing else: never searches, merges or writes a file.
A bug record inside them is built by harness/triage/records.py (build_record), and only there.
Everything here is plain data that pickles (units send their TargetResults across processes and
Dask clusters, harness/run/wire.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields

from crashcheck.harness.check.findings import Finding, HistoryOutcome
from crashcheck.harness.check.perf_tally import PerfTally
from crashcheck.harness.core.counts import for_json, json_int, per_second
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target import structures

# Counts that may pass any float: written by counts.for_json (states_legal: text past 2^53) and
# counts.json_int (the others: JSON integers, text only past what json can write).
BIG_COUNTS = {"states_legal": for_json, "states_explored": json_int, "states_checked": json_int,
              "states_pruned": for_json}


def _count(outcome: str | None):
    """A Stats field that adds up over histories (OUTCOME: the HistoryOutcome attribute each history
    adds; None: each history adds one; "": the search counts it itself, no outcome adds to it), and
    over the shares of a target and over targets."""
    return field(default=0, metadata={"count": True, "outcome": outcome})


@dataclass
class Stats:
    """What one target's histories covered. Its fields are iterated: a new count is one line here."""
    histories: int = _count(None)
    partial_histories: int = _count("partial")      # histories the budget (or a stop) cut short
    crash_points: int = _count("crash_points")
    states_legal: int = _count("states_legal")
    states_explored: int = _count("states_explored")
    states_checked: int = _count("states_checked")
    points_sampled: int = _count("points_sampled")  # crash points explored only in part (bounded sample, lazy cut)
    executions: int = _count("executions")          # checker executions (lazy: one per class of states)
    hung_short: int = _count("hung_short")          # checks judged hung under the shorter limit (check/hangs.py)
    not_checked: int = _count("not_checked")        # threaded: linearizability search out of budget
    # histories drawn again after a clean check of the same one (same schedule) in this share:
    # answered from that check, not run again (harness/run/search.py `clean`); part of `histories`
    repeated: int = _count("")
    # threaded: crash-free runs under aimed schedules after a clean run (harness/check/aims.py)
    aimed_runs: int = _count("aimed_runs")
    # threaded: persistency-race candidates from one execution, writer aims at them, confirmed by
    # a crash, not reached (warnings), and the analysis's seconds (harness/check/race_windows.py)
    race_candidates: int = _count("race_candidates")
    race_aims: int = _count("race_aims")
    race_confirmed: int = _count("race_confirmed")
    race_unreachable: int = _count("race_unreachable")
    race_s: float = _count("race_s")
    # failing crash states a bug the lane already knew explains, not judged again (harness/check/unmask.py)
    explained_states: int = _count("explained")
    # legal crash states a bug the lane already knew explains, never executed (harness/check/unmask.py)
    states_pruned: int = _count("pruned")
    threads: int = 1                 # threads per history
    # threaded, at the default --max-ops: the longest history a lane grew to (harness/run/lane_ops.py;
    # 0: never adapted)
    max_ops: int = 0
    elapsed_s: float = 0.0
    perf: PerfTally | None = None    # `fuzz --perf`: useless persistence over the histories (not a count)
    # capacity points a probe run observed (harness/check/capacity.py), each with the number of
    # checked histories that crossed it inside their checked part
    capacity: dict = field(default_factory=dict)
    # why a point of `capacity` was not crossed, when the run knows (its label -> the reason)
    capacity_why: dict = field(default_factory=dict)
    # the histories drawn to cross each point (harness/run/search.py `_cross_points`; part of
    # `histories`) and the seconds they took: the cost of crossing
    capacity_histories: int = _count("")
    capacity_s: float = _count("")

    @staticmethod
    def counts() -> list[str]:
        return [f.name for f in fields(Stats) if f.metadata.get("count")]

    def count(self, outcome: HistoryOutcome) -> None:
        """Add one checked history."""
        for f in fields(self):
            if f.metadata.get("count"):
                source = f.metadata["outcome"]
                if source != "":
                    setattr(self, f.name, getattr(self, f.name) + (1 if source is None else getattr(outcome, source)))
        if getattr(outcome, "perf", None) is not None:
            self.perf = PerfTally().add(self.perf).add(outcome.perf)

    def add(self, other: "Stats") -> None:
        """Add the stats of another share of the same target (shares run at once: the longest
        share's time is the target's)."""
        for name in self.counts():
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.elapsed_s = max(self.elapsed_s, other.elapsed_s)
        self.threads = max(self.threads, other.threads)
        self.max_ops = max(self.max_ops, other.max_ops)
        if other.perf is not None:
            self.perf = PerfTally().add(self.perf).add(other.perf)
        for label, n in other.capacity.items():
            self.capacity[label] = self.capacity.get(label, 0) + n
        for label, why in other.capacity_why.items():
            self.capacity_why.setdefault(label, why)
        for label in [k for k in self.capacity_why if self.capacity.get(k)]:
            del self.capacity_why[label]      # crossed by another share after all

    def as_json(self) -> dict:
        out: dict = {}
        for f in fields(self):
            if f.name == "perf":
                continue          # its own section of the row (Results.as_json)
            if f.name == "capacity_why":     # (a point crossed after all needs no reason)
                out[f.name] = {k: v for k, v in self.capacity_why.items() if not self.capacity.get(k)}
                continue
            value = getattr(self, f.name)
            if f.name in BIG_COUNTS:
                value = BIG_COUNTS[f.name](value)
            out[f.name] = round(value, 2) if f.name in ("elapsed_s", "capacity_s") else value
            if f.name == "points_sampled":
                out["points_complete"] = self.crash_points - self.points_sampled
        out.update(rates(self.executions, self.states_explored, self.elapsed_s))
        return out


def rates(executions: int, covered: int, elapsed_s: float) -> dict:
    """A run's two speeds (docs/bug-record.md): checker executions per second, and crash states
    covered per second (lazy: one execution covers a whole class of states, so this one can read
    10^12 and more); `states_per_s` is the older name of the second."""
    covered_per_s = per_second(covered, elapsed_s)
    return {"executions_per_s": per_second(executions, elapsed_s), "states_covered_per_s": covered_per_s,
            "states_per_s": covered_per_s}


def error_line(error: str | None) -> str | None:
    """The line that names an internal error (a traceback's last line), or None."""
    lines = [line for line in (error or "").strip().splitlines() if line.strip()]
    return lines[-1].strip()[:300] if lines else None


# A run's total over its targets leaves these out: thread counts differ per target, and histories
# not checked are told per target.
TOTAL_LEAVES_OUT = ("not_checked", "threads", "capacity", "capacity_why", "max_ops")   # (capacity: per structure)


@dataclass
class Progress:
    """A progress report of one target (or one share of it), sent after each history checked."""
    structure: str
    bug: str | None
    histories: int = 0
    states: int = 0                  # crash states explored
    executions: int = 0
    points: int = 0                  # crash points reached
    complete: int = 0                # of them, covered completely
    bugs: int = 0                    # unexpected bugs found so far
    elapsed: float = 0.0             # seconds

    @staticmethod
    def of(structure: str, bug: str | None, stats: Stats, bugs: int, elapsed: float) -> "Progress":
        return Progress(structure, bug, stats.histories, stats.states_explored, stats.executions,
                        stats.crash_points, stats.crash_points - stats.points_sampled, bugs, elapsed)

    @staticmethod
    def total(reports: list["Progress"]) -> "Progress":
        """The reports of one target's shares as one (the last one's names): counts added up, bugs
        the most any share has (a lower bound: shares may find the same bug), elapsed the longest."""
        last = reports[-1]
        return Progress(last.structure, last.bug, sum(p.histories for p in reports), sum(p.states for p in reports),
                        sum(p.executions for p in reports), sum(p.points for p in reports),
                        sum(p.complete for p in reports), max(p.bugs for p in reports),
                        max(p.elapsed for p in reports))


@dataclass
class Entry:
    """The smallest example seen of one bug (one group as found, before its crash state is shrunk)."""
    key: tuple[str, str]             # the group the finding was found under
    size: tuple[int, int]
    outcome: HistoryOutcome
    finding: Finding
    occurrences: int = 0
    first_seen: float = 0.0          # seconds into the run
    rank: tuple = ()                 # (size, batch, call): the lowest is the example kept
    found_at: tuple[int, int] = (0, 0)   # (batch, call) of the group's first example
    unshrunk: bool = False           # reported as first seen: its crash state was not shrunk
    # How far it was shrunk (docs/bug-record.md `shrink`): its history by Hypothesis in the batch
    # its example came from, and its crash state (harness/check/state_shrink.py)
    history_shrink: str = "not tried"
    state_shrink: str = "not tried"
    # a few other failing histories of its group (their ops): a fix proven on the example is
    # checked on them too (harness/check/fix_search.py)
    others: list = field(default_factory=list)


@dataclass
class TargetResult:
    structure: str
    bug: str | None
    stats: Stats
    records: list[dict] = field(default_factory=list)
    first_unexpected_s: float | None = None
    first_by_class: dict[str, float] = field(default_factory=dict)   # unexpected findings only
    interrupted: str | None = None   # "SIGINT"/"SIGTERM"/"worker lost": the run ended early
    error: str | None = None         # an internal error ended this target (its traceback)
    unshrunk: int = 0                # bugs reported as first seen: no time left to shrink them
    entries: list[Entry] = field(default_factory=list)   # one per group as found (internal)
    warnings: list[str] = field(default_factory=list)   # what the user must know besides the bugs
    race_warnings: list[dict] = field(default_factory=list)   # unconfirmed race candidates, as records
    target: int = 0                  # which target of the plan it is (harness/run/plan.py)

    @property
    def complete(self) -> bool:
        """It may be called complete: nothing stopped it, and it checked a history. Whoever ran
        it (in this process, --jobs, --dask), a target that checked no history is no pass: nothing
        is known about it (the CLI never exits 0 for it either)."""
        return not (self.interrupted or self.error) and self.stats.histories > 0


@dataclass
class Results:
    """What a run returns: the result of every target that ran, in plan order (targets a signal
    or an internal error kept from starting are left out), and the settings the results file
    names (the first target's)."""
    targets: list[TargetResult]
    settings: Settings

    @property
    def interrupted(self) -> str | None:
        return next((r.interrupted for r in self.targets if r.interrupted), None)

    @property
    def error(self) -> str | None:
        return next((r.error for r in self.targets if r.error), None)

    def as_json(self, command: str) -> dict:
        """The results file (docs/bug-record.md) of this run, made by COMMAND."""
        total = Stats()
        rows, bugs = [], []
        for r in self.targets:
            total.add(r.stats)
            try:
                designed = structures.get(r.structure).designed_for
            except UsageError:
                designed = None
            rows.append({"structure": r.structure, "bug": r.bug, "stats": r.stats.as_json(),
                         "designed_for": designed,
                         "unexpected": sum(1 for b in r.records if not b["expected"]),
                         "expected": sum(1 for b in r.records if b["expected"]),
                         "first_unexpected_s": r.first_unexpected_s,
                         "complete": r.complete, "unshrunk": r.unshrunk,
                         "warnings": list(r.warnings), "race_warnings": list(r.race_warnings),
                         "error": error_line(r.error)})
            if r.stats.perf is not None:
                rows[-1]["perf"] = r.stats.perf.as_json()
            bugs.extend(r.records)
        # targets run one after the other (or compete for the same slots): their times add up
        total.elapsed_s = round(sum(row["stats"]["elapsed_s"] for row in rows), 2)
        stats = {k: v for k, v in total.as_json().items() if k not in TOTAL_LEAVES_OUT}
        s = self.settings
        return {"crashcheck": 1, "structures": [r.structure for r in self.targets], "model": s.model,
                "strategy": s.strategy, "limit": s.limit, "seed": s.seed,
                "tracer": s.tracer, "assumptions": s.assumptions(), "command": command,
                "complete": bool(self.targets) and all(r.complete for r in self.targets),
                "interrupted": self.interrupted, "stats": stats, "per_structure": rows, "bugs": bugs}


__all__ = ["Entry", "Progress", "Results", "Stats", "TargetResult", "rates"]
