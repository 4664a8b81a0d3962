"""Which bugs' fixes remove which other failures: the proof that lets a symptom be folded.

Owns, after a share's examples are shrunk and their fixes searched and checked
(harness/run/fix_checks.py), applying each proven fix to the histories of the other examples
that share something with its finding (a group, a store it hinges on: harness/triage/bugs.py
shared_keys) but lose other minimal stores, in simulation as the fix search does
(Checker.prove_fix). A history that passes under the fix names the fix in its finding's
`removed_by`, and harness/triage/bugs.py merge folds it into that fix's bug; one that still
fails, or was not tried (no time left), is a bug of its own.

Beside those proofs (each checks every crash state of a history, while a share's time lasts),
`fold_by_states`, when the shares' examples are merged (harness/run/merge.py finish): for two
examples that lose different minimal stores and hinge on one store (they need the same
publication persisted: each loses another line of a node copied and then swung to), each one's
proven fix applied to the other's trace in simulation, with no recovery run (the Explainer of
harness/check/unmask.py): a fix under which none of the other's shrunk failing states (its example's
and up to two more of its group and cause, FOLD_STATES) is a legal crash state removes that failure, and it is named in its `removed_by`; so is a fix of a bug whose
minimal lost stores are part of the example's (it fails only with two bugs' stores lost). Seconds, and it sees the
examples of every share (one share's fix, another's failure), where a run ends with no time for
the full proofs (ART+CoW's swing published before its copy came out as three
records, each its own smallest fix). Never merges anything itself.
"""
from __future__ import annotations

import time
from typing import Callable

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.runner_client import Stopped
from crashcheck.harness.check.findings import Finding, site_key, store_site
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.check.unmask import Explainer, Known
from crashcheck.harness.core.budget import OutOfTime
from crashcheck.harness.core.errors import DriverFailure
from crashcheck.harness.triage.bugs import fix_key, hinge_keys, lost_cause, shared_keys

# seconds fold_by_states may take, whatever time the run has left: it runs no recovery, and what
# it proves is what a run with no time left for prove_folds reports as one bug or several
STATE_FOLD_S = 5.0
# failing states of one symptom a fix must each forbid for fold_by_states to fold it: its example's
# and those of other examples of its group and cause (a fix that forbids one state of a failure by
# chance, a line it happens to persist in that history, does not remove the failure)
FOLD_STATES = 3


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


def fold_by_states(options: ModelOptions, examples: list[tuple[Finding, object]], until: float,
                   alike: dict[int, list[tuple[Finding, object]]] | None = None) -> int:
    """For EXAMPLES ((finding, trace) pairs, shrunk), name in the `removed_by` of each finding no
    fix is proven to remove yet the proven fix of another under which its failing states cannot
    happen (module note), until the clock passes UNTIL; the number of pairs tried. A finding's
    states: its own, then those of ALIKE[id(finding)] (other shrunk examples of its group and
    cause, with their traces), FOLD_STATES in all at most; the fix must forbid each of them (a
    pair the clock stops before every state is asked folds nothing). A pair is
    tried when the two lose different minimal stores and hinge on one store neither loses (both
    directions: a commit of the swing removes every copy line's loss, a flush of one line does
    not remove another's), or when the other's minimal lost stores are part of this one's (a
    state that fails only losing two bugs' stores: WORT's insert's link and delete's unlink).
    One fix is named: a state each of two bugs' fixes forbids joins the bug whose store it loses
    first, in trace order, and is no bridge between them."""
    facts = []
    for f, t in examples:
        lost = lost_cause(t, f)
        ok = bool(lost) and not f.expected and f.point is not None and f.recovery_of is None and t is not None
        hinges = {k for k in hinge_keys(t, f) if k[1] not in lost} if ok else set()
        facts.append((f, t, lost, hinges, ok))
    tried = 0
    for b, tb, b_lost, b_hinges, b_ok in facts:
        if not b_ok or b.removed_by:
            continue
        removers = []
        for a, _, a_lost, a_hinges, a_ok in facts:
            fix = fix_key(a)
            if a is b or fix is None or not a_ok or a_lost == b_lost:
                continue
            hinged = {k for k in a_hinges & b_hinges if k[1] not in a_lost + b_lost}
            if not hinged and not set(a_lost) < set(b_lost):
                continue
            if time.monotonic() >= until:
                return tried
            tried += 1
            known = Known(fixes={fix: tuple(a.fix.edits)})
            states = [(b, tb)] + [s for s in (alike or {}).get(id(b), []) if s[0] is not b][:FOLD_STATES - 1]
            forbidden = True
            for s, ts in states:
                if time.monotonic() >= until and s is not b:
                    return tried
                if not Explainer(known, ts, options).explains(s.point, s.choice):
                    forbidden = False
                    break
            if forbidden:
                removers.append((a_lost, fix))
        if removers:
            first = site_key(tb, store_site(tb, min(b.lost, key=lambda p: p.seq)))
            b.removed_by.append(next((fix for lost, fix in removers if first in lost), removers[0][1]))
    return tried


__all__ = ["FOLD_STATES", "STATE_FOLD_S", "fold_by_states", "prove_folds"]
