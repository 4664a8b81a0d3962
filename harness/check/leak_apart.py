"""Which leaks shown beside a crash's failure are that failure's: a symptom is folded into a bug
only when that bug's fix removes it (issue 48).

Owns the check of a shrunk finding's leak symptoms (harness/check/ranking.py fold_state folds the
findings of one crash state into the most telling one): the same crash state is checked again
with every store it lost persisted, as the failure's fix (a flush and fence of those stores) would
leave it. A leak that is still there, of the same allocation site, is not that crash's symptom:
the code left the object unreachable whatever persisted (an old value never freed, shown only in
histories whose states also lose a store), and it comes out as a finding of its own, in the state
that loses nothing (harness/triage/bugs.py keeps such a leak apart from every bug of lost stores).
Never merges findings; it returns those split off.
"""
from __future__ import annotations

from crashcheck.crashsim.explore import StateOutcome
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.crash_states import state_checker
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.judging import HistoryJudge
from crashcheck.harness.check.session import Session


def leaks_apart(session: Session, trace: Trace, oracle: SequentialOracle, f: Finding) -> list[Finding]:
    """F's unexpected leak symptoms still shown when every store F's state lost persists, taken out
    of F.symptoms and returned as leak findings of that state (one per group); [] when F loses
    nothing, has no such symptom, or is a crash inside recovery."""
    leaks = {s.group for s in f.symptoms if s.cls == "leak" and not s.expected}
    cp = f.point
    if not leaks or cp is None or not f.lost or f.recovery_of is not None:
        return []
    whole, follow = tuple(cp.radices), oracle.follow_text(cp)
    [res] = state_checker(session, trace, cp.index, follow)([whole])
    out = StateOutcome(cp, whole, session.free_state_id(), 0, None, result=res, followup=follow)
    still = {g.group: g for g in HistoryJudge(session, trace, oracle).judge(out) if g.group in leaks}
    f.symptoms = [s for s in f.symptoms if s.group not in still]
    return list(still.values())


__all__ = ["leaks_apart"]
