"""The crash states of a point that keep given pieces, as a crash point of their own.

Owns `keeping` and `KeptPoint`. A search that already knows a bug (harness/check/unmask.py) need
not execute the states that lose that bug's stores: they fail as that bug again. What is left is
a product again, since a unit's choices either keep every piece asked for or not: a line's
prefix unit keeps them from the prefix that holds its last such piece on; a unit with an unordered
run (Unit.orders) keeps the choices whose kept pieces include them. Each restricted unit lists its
choices as `orders` (the kept pieces of every choice, the form an unordered unit already has), so
the strategies, the state codec and the lazy plan explore the restricted point as they would any
other; crashcheck.crashsim.explore maps each explored state back to the whole point's choice
vector, which is what findings, records and replay name.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Collection, Sequence

from .simulate import CrashPoint, Unit


@dataclass
class KeptPoint(CrashPoint):
    """The states of WHOLE that keep the pieces asked for (legal: how many); `to_whole[j]` maps
    unit j's choices here to WHOLE's (None: the unit is WHOLE's, unchanged)."""
    whole: CrashPoint | None = field(default=None, repr=False)
    to_whole: tuple[tuple[int, ...] | None, ...] = field(default=(), repr=False)

    @property
    def pruned(self) -> int:
        """WHOLE's legal states left out (a Python int: a point may have more than 2^64)."""
        return self.whole.legal - self.legal

    def whole_choice(self, choice: Sequence[int]) -> tuple[int, ...]:
        """CHOICE (a state of this point) as a choice vector of WHOLE."""
        return tuple(k if m is None else m[k] for k, m in zip(choice, self.to_whole))


def keeping(cp: CrashPoint, must: Collection[int]) -> KeptPoint | None:
    """CP's states that keep every pending piece whose id is in MUST; None when no pending piece
    of CP is in MUST (every state keeps them all)."""
    must = set(must)
    units, to_whole, legal, changed = [], [], 1, False
    for u in cp.units:
        need = {i for i, p in enumerate(u.pieces) if p.id in must}
        if not need:
            units.append(u)
            to_whole.append(None)
            legal *= u.choices
            continue
        changed = True
        if u.orders is None:            # a prefix: from the one holding its last such piece on
            ks = list(range(max(need) + 1, u.choices))
        else:
            ks = [k for k in range(u.choices) if need <= _kept_indices(u, k)]
        r = Unit(u.kind, u.line, u.pieces)
        # (frozen: as Unit.__post_init__ sets its own orders)
        object.__setattr__(r, "orders", tuple(tuple(sorted(_kept_indices(u, k))) for k in ks))
        units.append(r)
        to_whole.append(tuple(ks))
        legal *= len(ks)
    if not changed:
        return None
    same = {f.name: getattr(cp, f.name) for f in fields(CrashPoint)}
    same.update(units=tuple(units), legal=legal)
    return KeptPoint(**same, whole=cp, to_whole=tuple(to_whole))


def _kept_indices(u: Unit, k: int) -> set[int]:
    """The positions in U.pieces of the pieces choice K keeps."""
    return set(range(k)) if u.orders is None else set(u.orders[k])


__all__ = ["KeptPoint", "keeping"]
