"""The Checker's methods for persistency races of a threaded history: pairs an explored schedule
showed (harness/check/persistency_race.py) and candidates from one execution (race_windows.py),
a few run again under a writer aim and confirmed by a crash (race_confirm.py); and where a
history's checked part begins in its trace (first_op_event).

A mixin of harness/check/pipeline.py's Checker, apart so the facade stays one job: it uses the
Checker's session, settings, budget, model, aimer, confirmer, check() and oracle().
"""
from __future__ import annotations

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import aims, persistency_race, race_confirm, race_windows
from crashcheck.harness.check.findings import Finding, HistoryOutcome


def first_op_event(ops, trace: Trace) -> int:
    """The trace event where OPS's checked part begins (the op_begin of its first operation after
    the load phase; the trace's end if it never began). Crash points before it fall in pool
    formatting and the structure's create, which are set-up, not part of the history; so does a
    history's load phase (crashcheck.specs.model.Workload.load)."""
    load = getattr(ops, "load", 0)
    return next((i for i, ev in enumerate(trace.events) if ev.kind == "op_begin" and ev.addr == load),
                len(trace.events))


class CheckerRaces:
    """Persistency races, for the Checker."""

    def _persistency_races(self, outcome: HistoryOutcome, lines: list[str]) -> tuple[list[Finding], list[str]]:
        """The confirmed persistency races of OUTCOME's threaded trace, and warnings for the others."""
        ops, trace = outcome.ops, outcome.trace
        pairs = persistency_race.find_pairs(trace, self.settings.options(), first_op_event(ops, trace))
        if not pairs:
            return [], []
        return persistency_race.confirm(self.session, trace, self.oracle(ops, trace, lines, outcome.followup), pairs)

    def _race_candidates(self, outcome: HistoryOutcome, deadline: float | None) -> HistoryOutcome | None:
        """The persistency-race candidates of OUTCOME's clean threaded run (race_windows.py), a
        few of them run again under a writer aim (race_confirm.py): the aimed run's outcome if it
        failed (crash-free, or its race confirmed by a crash), else None, with the counts and a
        warning per candidate not confirmed in OUTCOME."""
        ops, trace = outcome.ops, outcome.trace
        if not aims.worth_aiming(ops, trace):
            return None
        options = self.settings.options()
        start = first_op_event(ops, trace)
        found, stats = race_windows.candidates(trace, options, start)
        outcome.race_candidates, outcome.race_s = stats.candidates, stats.seconds
        key = (self.aimer.lane, ops.sched, ops.load, ops.thread_of, tuple(repr(op) for op in ops))
        for c, spec, prefix in self.confirmer.plan(key, self.aimer.lane, found, aims.seed_of(ops.sched)):
            if self.budget.expired():
                break
            aimed = aims.aimed(ops, spec, outcome.schedule if prefix else None)
            out = self.check(aimed, crashes=False, deadline=deadline)
            outcome.race_aims += 1
            if not out.findings and out.trace is not None:
                v = race_confirm.judge(self.session, out.trace, self.oracle(aimed, out.trace, out.lines, out.followup),
                                       options, first_op_event(aimed, out.trace), c, spec)
                out.findings = v.findings
                self.confirmer.settle(v)
                if v.findings:
                    self.confirmer.confirmed.add(c.key)
                    outcome.race_confirmed += 1
                elif self.confirmer.given_up(c):
                    outcome.race_unreachable += 1
                    outcome.warnings.append(race_confirm.warning(out.trace, v))
                    outcome.race_records.append(race_confirm.warning_record(out.trace, v, aimed, self.model,
                                                                            out.schedule))
            if out.findings:
                for f in ("race_candidates", "race_aims", "race_confirmed", "race_unreachable", "race_s"):
                    setattr(out, f, getattr(outcome, f))
                return out
        return None
