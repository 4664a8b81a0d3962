"""Useless persistence over a fuzz run (`crashcheck fuzz --perf`): flushes and fences that did
nothing, counted per source site and per kind of operation, over every history checked.

Owns the tally one history's trace adds (crashsim/perf.py finds what did nothing in one trace),
adding tallies up (over histories, the shares of a target), and its JSON form in the results
file (docs/bug-record.md `perf`). Never a bug: a structure full of redundant flushes is still
crash consistent; the counts are a performance report (Witcher's performance bugs, pmemcheck's
redundant flushes). A threaded history's trace is not tallied (its operations interleave).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from crashcheck.crashsim.perf import KINDS, useless_by_operation, useless_persistence
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.findings import site_key
from crashcheck.harness.core.paths import display

# sites kept in the results file, most frequent first
MAX_SITES = 40


@dataclass
class PerfTally:
    histories: int = 0
    operations: int = 0
    totals: Counter = field(default_factory=Counter)           # flushes, fences, and each kind of KINDS
    # (kind, instruction, file:line, where in words) -> count
    sites: Counter = field(default_factory=Counter)
    # operation kind (insert, lookup, ...) -> Counter of ops, flushes, fences and KINDS
    by_op: dict[str, Counter] = field(default_factory=dict)

    @classmethod
    def of(cls, trace: Trace, op_kinds: list[str]) -> "PerfTally":
        """The tally of one history's TRACE; OP_KINDS: its operations' kinds, in order."""
        out = cls(histories=1, operations=len(op_kinds))
        rows, totals = useless_persistence(trace)
        out.totals.update(totals)
        for r in rows:
            s = trace.site(r.site)
            # named at the structure's line that called a helper (persist.h's cc_mfence)
            func = (s.inlined_func or s.func if s.inlined_line else s.func) if s else "?"
            file, _, line = site_key(trace, r.site, caller=True).rpartition(":")
            out.sites[(r.kind, r.sub, f"{display(file)}:{line}" if file else line, func)] += r.count
        for op, counts in useless_by_operation(trace).items():
            kind = op_kinds[op] if op is not None and 0 <= op < len(op_kinds) else "set-up"
            c = out.by_op.setdefault(kind, Counter())
            c.update(counts)
        for kind in op_kinds:
            out.by_op.setdefault(kind, Counter())["ops"] += 1
        return out

    def add(self, other: "PerfTally | None") -> "PerfTally":
        if other is not None:
            self.histories += other.histories
            self.operations += other.operations
            self.totals.update(other.totals)
            self.sites.update(other.sites)
            for kind, c in other.by_op.items():
                self.by_op.setdefault(kind, Counter()).update(c)
        return self

    def as_json(self) -> dict:
        totals = {k: self.totals.get(k, 0) for k in ("flushes", "fences", *KINDS)}
        sites = [{"kind": kind, "sub": sub, "where": where, "func": func, "count": n}
                 for (kind, sub, where, func), n in self.sites.most_common(MAX_SITES)]
        by_op = {}
        for kind, c in sorted(self.by_op.items()):
            ops = c.get("ops", 0)
            row = {k: c.get(k, 0) for k in ("ops", "flushes", "fences", *KINDS)}
            row["per_op"] = {k: round(c.get(k, 0) / ops, 2) for k in ("flushes", "fences", *KINDS)} if ops else {}
            by_op[kind] = row
        return {"histories": self.histories, "operations": self.operations, "totals": totals,
                "sites": sites, "by_operation": by_op}


def perf_line(perf: dict) -> str:
    """One summary line of a results file's `perf` (never a bug)."""
    t, ops = perf["totals"], perf.get("operations") or 0
    useless = sum(t[k] for k in KINDS)
    per = f" ({useless / ops:.2f} per operation)" if ops else ""
    return (f"perf: {t['flushes']} flushes, {t['fences']} persistence fences in {perf['histories']} histories; "
            f"did nothing: {t['flush-clean-line']} flushes of a clean line, {t['flush-repeated']} repeated "
            f"flushes, {t['fence-idle']} fences with nothing to order{per} (not bugs)")


__all__ = ["MAX_SITES", "PerfTally", "perf_line"]
