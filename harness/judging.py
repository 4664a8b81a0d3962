"""Judging the answers of one history's crash states: consistency verdicts and leaks.

Owns turning a runner answer (crashsim.explore's StateOutcome) into findings: the oracle's verdict
against the structure's model (specs/oracle.py), the leak policy (specs/leaks.py, with the
structure's list of known leaks), and the caches that make both cheap when many crash states
recover to the same image (a verdict depends only on the answer and the crash point in history
terms; leaks are attributed once per answer and crash point).
"""
from __future__ import annotations

from typing import Sequence

from crashsim.explore import StateOutcome
from crashsim.trace import Trace
from harness.findings import Finding, finding_group, oracle_point, result_dict
from harness.session import Session
from specs import leaks as leak_policy
from specs.oracle import CrashPoint, Verdict, judge_recovery


class HistoryJudge:
    """Judges crash states of one traced history (OPS, whose possible states per prefix are
    SETS, with the follow-up FOLLOW run after every recovery)."""

    def __init__(self, session: Session, trace: Trace, ops: list, sets: Sequence[Sequence], follow: list) -> None:
        self.session = session
        self.trace = trace
        self.ops = ops
        self.sets = sets
        self.follow = follow
        self._verdicts: dict[tuple, tuple[Verdict, list[dict]]] = {}
        self._leaks: dict[tuple, tuple[list[dict], dict | None]] = {}
        self._leak_index: leak_policy.LeakIndex | None = None

    def verdict(self, point: CrashPoint, res) -> Verdict:
        """The oracle's verdict on one answer RES for a crash at POINT (history terms)."""
        return judge_recovery(self.ops, point, result_dict(res), self.follow,
                              model=self.session.model, sets=self.sets)

    def judge(self, out: StateOutcome) -> list[Finding]:
        """The findings of one explored state (none when it was not checked or is fine)."""
        res = out.result
        if res is None:
            return []
        point = oracle_point(out.point, len(self.ops))
        key = (res.first, point.done, point.inflight)
        if key not in self._verdicts:
            verdict = self.verdict(point, res)
            leaked = leak_policy.unreachable(res.result) if verdict.ok or verdict.cls != "recovery-crash" else []
            self._verdicts[key] = (verdict, leaked)
        verdict, leaked = self._verdicts[key]
        found: list[Finding] = []
        if not verdict.ok and verdict.checked:
            f = Finding(verdict.cls, verdict.detail, (verdict.cls, ""), point=out.point,
                        choice=out.choice, verdict=verdict, result=res)
            f.group = finding_group(self.trace, f)
            found.append(f)
        if leaked:
            found.append(self._leak(out, res, leaked))
        return found

    def _leak(self, out: StateOutcome, res, leaked: list[dict]) -> Finding:
        leak_key = (res.first, out.point.index)
        if leak_key not in self._leaks:
            if self._leak_index is None:
                self._leak_index = leak_policy.LeakIndex(self.trace)
            objs = self._leak_index.attribute(leaked, out.point.event)
            self._leaks[leak_key] = (objs, leak_policy.expected(self.session.structure.known, objs,
                                                                self._leak_index.touched_in_flight(out.point.event)))
        objs, known = self._leaks[leak_key]
        first = objs[0]
        group_site = f"{first['site']['file']}:{first['site']['line']}" if first.get("site") else "?"
        # Expected and unexpected leaks from one allocation site are different findings.
        return Finding("leak", leak_policy.describe(objs),
                       ("leak", group_site + (" (expected)" if known is not None else "")),
                       expected=known is not None, expected_reason=(known or {}).get("reason", ""),
                       point=out.point, choice=out.choice, result=res, leaks=objs)


__all__ = ["HistoryJudge"]
