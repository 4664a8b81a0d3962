"""Which bugs' fixes remove which other failures: the proof that lets a symptom be folded.

Owns, after a share's examples are shrunk and their fixes searched and checked
(harness/run/fix_checks.py), applying each proven fix to the histories of the other examples
that share something with its finding (a group, a store it hinges on: harness/triage/bugs.py
shared_keys) but lose other minimal stores, in simulation as the fix search does
(Checker.prove_fix). A history that passes under the fix names the fix in its finding's
`removed_by`, and harness/triage/bugs.py merge folds it into that fix's bug; one that still
fails, or was not tried (no time left), is a bug of its own. Never merges anything itself.
"""
from __future__ import annotations

from typing import Callable

from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.triage.bugs import fix_key, lost_cause, shared_keys


def prove_folds(checker: Checker, entries, stop: Callable[[], bool]) -> int:
    """Prove the fixes of ENTRIES' examples on the other examples they might be folded with,
    newest fix first, until STOP or the run's time says no more; the number of proofs run."""
    entries = list(entries)
    facts = []
    for e in entries:
        f, t = e.finding, e.outcome.trace
        facts.append((lost_cause(t, f), {(f.expected,) + k for k in shared_keys(t, f)}))
    pairs = []
    for a, (a_lost, a_keys) in zip(entries, facts):
        fix = fix_key(a.finding)
        if fix is None:
            continue
        for b, (b_lost, b_keys) in zip(entries, facts):
            if b is not a and b_lost and b_lost != a_lost and not b.finding.expected:
                # first the pairs that share a key (merge would fold them), the newest fix first;
                # then the others (they may meet through a third finding without lost stores)
                pairs.append((not a_keys & b_keys, tuple(-x for x in a.found_at), b.found_at, a, b, fix))
    tried = 0
    for *_, a, b, fix in sorted(pairs, key=lambda p: p[:3]):
        if fix in b.finding.removed_by:
            continue
        if stop() or checker.budget.expired():
            break
        # the other known fixes (but B's own) applied too, so that a third bug in B's history
        # masks nothing; then A's fix must be what makes the difference
        own = fix_key(b.finding)
        rest = tuple(e for words, edits in checker.known_fixes.items() if words not in (fix, own) for e in edits)
        tried += 1
        try:
            ok = checker.prove_fix(b.outcome.ops, a.finding.fix.edits, rest)
            if ok and rest:
                ok = checker.prove_fix(b.outcome.ops, (), rest) is False
        except (Stopped, OutOfTime, DriverFailure, ValueError):
            ok = None
        if ok:
            b.finding.removed_by.append(fix)
    return tried


__all__ = ["prove_folds"]
