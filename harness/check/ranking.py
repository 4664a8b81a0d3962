"""Which finding names a mistake best: the order of finding classes, and one crash state, one bug.

Owns the ranking of finding classes (PRIMARY_ORDER, TIERS) and the rule that the findings of one
crash state (an invariant violation and the leak its lost pointer causes) are one finding, the most
telling class first, the others kept as its symptoms (`fold_state`). The checker applies it to
each state's findings; harness/triage/bugs.py uses the same order to name a bug across histories.
"""
from __future__ import annotations

from crashcheck.harness.check.findings import Finding

# The class a person fixes first: a broken rule of the structure, then a recovery that dies or
# hangs, then what the contents show, then what only later operations or the allocator show.
# A persistency race comes before all of them: confirmed by a crash state that shows one of them,
# it also names the two accesses (and threads) that made it (harness/check/persistency_race.py);
# so does a torn store name the store that persisted in part (harness/check/torn_store.py).
PRIMARY_ORDER = ("persistency-race", "torn-store", "invariant-violation", "recovery-crash", "recovery-hang", "resurrected-delete",
                 "lost-durable-write", "torn-update", "wrong-value", "post-recovery-divergence",
                 "leak")


# Tiers of PRIMARY_ORDER: what the recovered structure shows (a rule, its contents) names a
# mistake; a recovery that dies or refuses, a later operation and a leak only show that there is one.
TIERS = ({"persistency-race", "torn-store"}, {"invariant-violation", "resurrected-delete", "lost-durable-write", "torn-update", "wrong-value"},
         {"recovery-crash", "recovery-hang"}, {"post-recovery-divergence"}, {"leak"})


def rank(cls: str) -> int:
    return PRIMARY_ORDER.index(cls) if cls in PRIMARY_ORDER else len(PRIMARY_ORDER)


def tier(cls: str) -> int:
    return next((i for i, t in enumerate(TIERS) if cls in t), len(TIERS))


def after_followup(f: Finding) -> bool:
    """F's broken rules showed only once the follow-up's operations ran on a structure whose own
    check passed after recovery (check JSON followup_violations)."""
    body = f.result.result if f.result is not None and isinstance(f.result.result, dict) else {}
    return f.cls == "invariant-violation" and not body.get("violations") and bool(body.get("followup_violations"))


def finding_tier(f: Finding) -> int:
    """F's tier: its class's, except that rules broken only after the follow-up show, like a
    follow-up's wrong answer, that there is a mistake rather than what the crash did."""
    return tier("post-recovery-divergence") if after_followup(f) else tier(f.cls)


def fold_state(found: list[Finding]) -> list[Finding]:
    """The findings of one crash state as bugs: unexpected ones become symptoms of the most
    telling unexpected one; expected ones stay apart (a leak known by design is not a symptom)."""
    unexpected = [f for f in found if not f.expected]
    if len(unexpected) < 2:
        return found
    primary = min(unexpected, key=lambda f: rank(f.cls))
    primary.symptoms.extend(f for f in unexpected if f is not primary)
    return [primary] + [f for f in found if f.expected]
