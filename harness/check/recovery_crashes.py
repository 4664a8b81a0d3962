"""Crashes inside recovery: recovery must be idempotent.

Owns picking a few post-crash images of a history whose recovery has work to do (mid-operation,
some pending stores persisted and some lost) among those that pass on their own
(`worth_crashing`: a failing image is a finding already), tracing that recovery, crashing it at every point
the persistency model allows, and judging the second recovery against what the original crash
allowed. Findings carry the original crash (`recovery_of`) and the recovery's trace.
"""
from __future__ import annotations

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.trace import Trace, TraceError
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.crash_states import images_at
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.check.findings import RECOVERY_CRASH_PREFIX, Finding, HistoryOutcome, add_finding, finding_group
from crashcheck.harness.check.session import Session
from crashcheck.harness.check.traced_run import trace_recovery


def pick(candidates: list[tuple[int, tuple[int, ...]]], n: int) -> list[tuple[int, tuple[int, ...]]]:
    """N of CANDIDATES spread evenly over the history, without repeats."""
    picks = [candidates[round(i * (len(candidates) - 1) / max(1, n - 1))] for i in range(min(n, len(candidates)))]
    return list(dict.fromkeys(picks))


def worth_crashing(out, found: list[Finding]) -> bool:
    """Whether the explored state OUT is a post-crash image to crash again inside its recovery:
    mid-operation, some pending stores persisted and some lost (a half-done change is where
    recovery has work), and recovered and judged fine (FOUND: its findings; only expected ones
    allowed). A failing image is a finding already: crashing its recovery shows the same mistake
    again and would report it as a second bug."""
    return (out.point.op is not None and out.result is not None and out.result.ok
            and all(f.expected for f in found)
            and any(k < u.choices - 1 for u, k in zip(out.point.units, out.choice))
            and any(k > 0 for k in out.choice))


def crash_recoveries(session: Session, trace: Trace, oracle: SequentialOracle,
                     candidates: list[tuple[int, tuple[int, ...]]], outcome: HistoryOutcome) -> list[Finding]:
    """Crash inside the recovery of a few post-crash images of TRACE (CANDIDATES: crash point
    index and choice), judging each second recovery by ORACLE at the original crash; the
    findings, one per group, counted into OUTCOME's coverage."""
    s = session.settings
    found: dict[tuple[str, str], Finding] = {}
    picks = pick(candidates, s.recovery_crashes)
    for n, ((cp_index, choice), (cp, image)) in enumerate(zip(picks, images_at(session, trace, picks))):
        try:
            rtrace = trace_recovery(session, trace, image)
        except (DriverFailure, TraceError):
            continue      # the plain check of this state already judged its recovery (also
            #               when recovery misbehaves: it did the same under the runner)
        if not any(ev.kind in ("store", "ntstore") for ev in rtrace.events):
            continue      # recovery wrote nothing: crashing inside it changes nothing
        point = oracle.history_point(cp)
        follow_text = oracle.follow_text(cp)    # the original crash's: recovery's crash is judged there
        runner = session.runner(rtrace)      # recovery may register its regions differently
        before = runner.stats.states
        scope = ("recovery", cp_index, tuple(choice))
        for out in explore(rtrace, options=s.options(), strategy=s.strategy, limit=s.limit, seed=s.seed,
                           runner=runner, followup=follow_text, first_state=session.free_state_id(),
                           stop=session.budget.expired, relocatable=session.structure.own_pool):
            session.next_state = out.id + 1
            outcome.coverage.count(out, scope)
            res = out.result
            if res is None:
                continue
            verdict = oracle.verdict(cp, res)
            if verdict.ok or not verdict.checked:
                continue
            f = Finding(verdict.cls, RECOVERY_CRASH_PREFIX + verdict.detail,
                        (verdict.cls, ""), point=out.point, choice=out.choice, verdict=verdict,
                        result=res, recovery_of=(cp_index, tuple(choice)), recovery_trace=rtrace,
                        history_point=point)
            f.group = finding_group(trace, f)
            add_finding(found, f)
        outcome.states_checked += runner.stats.states - before
    return list(found.values())


__all__ = ["crash_recoveries", "pick", "worth_crashing"]
