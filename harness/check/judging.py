"""Judging the answers of one history's crash states: consistency verdicts and leaks.

Owns turning a runner answer (crashcheck.crashsim.explore's StateOutcome) into findings: the oracle's verdict
against the structure's model (specs/oracle.py), the leak policy (specs/leaks.py, with the
structure's list of known leaks), and the caches that make both cheap when many crash states
recover to the same image (a verdict depends only on the answer and the crash point in history
terms; leaks are attributed once per answer and crash point).
"""
from __future__ import annotations

from crashcheck.crashsim.explore import StateOutcome
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.findings import Finding, finding_group
from crashcheck.harness.check.session import Session
from crashcheck.specs import leaks as leak_policy
from crashcheck.specs.oracle import Verdict


class HistoryJudge:
    """Judges crash states of one traced history through its ORACLE (harness/check/crash_oracle.py:
    the history's operations, states or History, and follow-up)."""

    def __init__(self, session: Session, trace: Trace, oracle: SequentialOracle) -> None:
        self.session = session
        self.trace = trace
        self.oracle = oracle
        self.unchecked = 0        # states whose verdict search ran out of budget (never a pass)
        self._verdicts: dict[tuple, tuple[Verdict, list[dict]]] = {}
        self._leaks: dict[tuple, tuple[list[dict], dict | None]] = {}
        self._in_flight: dict[tuple, bool] = {}      # leak_key -> only objects of the operation in flight
        self._leak_index: leak_policy.LeakIndex | None = None

    def judge(self, out: StateOutcome) -> list[Finding]:
        """The findings of one explored state (none when it was not checked or is fine)."""
        res = out.result
        if res is None:
            return []
        key = (res.first, self.oracle.key(out.point))
        if key not in self._verdicts:
            verdict = self.oracle.verdict(out.point, res)
            leaked = leak_policy.unreachable(res.result) if verdict.ok or verdict.cls != "recovery-crash" else []
            self._verdicts[key] = (verdict, leaked)
        verdict, leaked = self._verdicts[key]
        found: list[Finding] = []
        if not verdict.checked:
            self.unchecked += 1
        elif not verdict.ok:
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
            catalog, in_flight = self.session.structure.known, self._leak_index.touched_in_flight(out.point.event)
            match = leak_policy.expected(catalog, objs, in_flight)
            if match is None:
                objs = leak_policy.unexplained_first(catalog, objs, in_flight)
            self._leaks[leak_key] = (objs, match)
            # every leaked object one the operation in flight allocates or frees, none declared:
            # nothing reclaims what an interrupted operation left (one cause, whichever site
            # allocated it; a capacity crossed shows it at a node's or a chunk's site too)
            self._in_flight[leak_key] = match is None and all(o["off"] in in_flight for o in objs)
        objs, known = self._leaks[leak_key]
        first = objs[0]
        group_site = f"{first['site']['file']}:{first['site']['line']}" if first.get("site") else "?"
        if self._in_flight[leak_key]:
            group_site = "objects of the operation in flight, not reclaimed"
        # Expected and unexpected leaks from one allocation site are different findings.
        f = Finding("leak", leak_policy.describe(objs),
                    ("leak", group_site + (" (expected)" if known is not None else "")),
                    expected=known is not None, expected_reason=(known or {}).get("reason", ""),
                    point=out.point, choice=out.choice, result=res, leaks=objs)
        # lost nothing, and left unreachable an object no operation in flight touched
        in_flight = self._leak_index.touched_in_flight(out.point.event)
        f.left_by_code = not f.lost and any(o["off"] not in in_flight for o in objs)
        return f


__all__ = ["HistoryJudge"]
