"""Lazy exploration in program mode: a crash point's states are told apart only by what the
program's own commands read of the image (their read logs, harness/check/program_reads.py).

Owns one crash point's search. The plan is crashcheck.crashsim.lazy's (the point's undetermined lines in
groups, each with the contents of every legal variant). An execution is one concrete crash state
(a variant per group) judged by the commands, which log their accesses of the image in order. The
log is replayed here as crashsim/runner/lazy.c branches online: every group starts with all its
variants allowed; a read of a group's bytes (not ones the commands wrote first) that the allowed
variants disagree on is a branch point, where the variants split into classes by those bytes and
the group narrows to the class of the executed variant. Every other class there opens a new
execution: the same state with that group at the class's representative (the member keeping the
most stores), which reads exactly what this one read up to that point (a deterministic command
reading the same bytes in the same order does the same thing) and then sees the other class. It
inherits the branch points up to there and opens only the ones past them, so the executions are
the leaves of the decision tree and their classes (the product of the narrowed groups) partition
the point's legal states: the point is complete when they add up to its legal count.

An execution whose reads cannot be trusted (a command that hung, a log the runtime refused) or
that did not retrace its parent's branch points (a command that is not deterministic) stands for
its own state only; a point with one, or whose search reaches its cap, is partial, and the caller
checks the bounded sample's states no class covers.
"""
from __future__ import annotations

import bisect
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

from crashcheck.crashsim.lazy import Leaf, LazyPlan
from crashcheck.crashsim.states import legal_count
from crashcheck.harness.check.program_reads import Reads
from crashcheck.harness.core.budget import OutOfTime

# (group index, its classes at the branch point as sorted variant lists, the class taken)
Branch = tuple[int, list[list[int]], int]


@dataclass
class Outcome:
    """What one crash point's lazy search did."""
    leaves: list[Leaf] = field(default_factory=list)
    executions: int = 0
    covered: int = 0
    unknown: int = 0          # executions whose class is not known (it stands for its own state)
    capped: bool = False
    cut: bool = False         # --budget ran out during the search (it stopped there: partial)

    def complete(self, legal: int) -> bool:
        return not self.capped and not self.unknown and self.covered == legal


class Replayer:
    """Replays read logs against one plan (LayoutOffsets: where each image file starts in the image)."""

    def __init__(self, plan: LazyPlan, offsets: Sequence[int]) -> None:
        self.plan = plan
        self.offsets = offsets
        ls = self.ls = plan.cp.line_size
        self.where: dict[int, tuple[int, int]] = {}      # line index -> (group, its place in the group)
        self.contents: dict[int, list[bytes]] = {}
        for gi in plan.sent:
            for i, off in enumerate(plan.groups[gi].lines):
                self.where[off // ls] = (gi, i)
        self.lines = sorted(self.where)

    def _contents(self, gi: int) -> list[bytes]:
        got = self.contents.get(gi)
        if got is None:
            got = self.contents[gi] = self.plan.variant_contents(gi)
        return got

    def replay(self, variants: Sequence[int], reads: Sequence[Reads]) -> tuple[list[Branch], list[list[int] | None]]:
        """The branch points the logged READS (recovery's, then the checker's) meet when the groups
        hold VARIANTS, and each group's allowed variants at the end (None: never narrowed)."""
        ls, where, lines = self.ls, self.where, self.lines
        groups = self.plan.groups
        allowed: list[list[int] | None] = [None] * len(groups)
        owned: dict[int, int] = {}            # line index -> bit mask of the bytes the commands wrote
        branches: list[Branch] = []
        for r in reads:
            for image, off, size, store in r.records():
                x0 = self.offsets[image] + off
                x1 = x0 + size
                k = bisect.bisect_left(lines, x0 // ls)
                spans: dict[int, list[tuple[int, int]]] = {}
                while k < len(lines) and lines[k] * ls < x1:
                    line = lines[k]
                    k += 1
                    lo, hi = max(x0, line * ls) - line * ls, min(x1, (line + 1) * ls) - line * ls
                    bits = ((1 << hi) - 1) ^ ((1 << lo) - 1)
                    if store:
                        owned[line] = owned.get(line, 0) | bits
                        continue
                    bits &= ~owned.get(line, 0)
                    gi, at = where[line]
                    b = 0
                    while bits:                       # the runs of bytes read that it did not write
                        while not bits >> b & 1:
                            b += 1
                        e = b
                        while bits >> e & 1:
                            e += 1
                        spans.setdefault(gi, []).append((at * ls + b, at * ls + e))
                        bits &= ~(((1 << e) - 1) ^ ((1 << b) - 1))
                        b = e
                for gi, sp in spans.items():
                    vs = allowed[gi] if allowed[gi] is not None else range(len(groups[gi].variants))
                    contents = self._contents(gi)
                    classes: dict[bytes, list[int]] = {}
                    for v in vs:
                        c = contents[v]
                        classes.setdefault(b"".join(c[s:e] for s, e in sp), []).append(v)
                    if len(classes) == 1:
                        continue
                    ordered = sorted(classes.values(), key=lambda c: c[0])
                    taken = next(i for i, c in enumerate(ordered) if variants[gi] in c)
                    branches.append((gi, ordered, taken))
                    allowed[gi] = ordered[taken]
        return branches, allowed


def _rep(plan: LazyPlan, gi: int, members: Sequence[int]) -> int:
    """The member of a class that keeps the most stores (first in order among equals)."""
    g = plan.groups[gi]
    return max(members, key=lambda v: (g.kept(v), -v))


def choice_of(plan: LazyPlan, variants: Sequence[int]) -> tuple[int, ...]:
    """The crash state (choice vector) of one variant per group."""
    choice = [0] * len(plan.cp.units)
    for g, v in zip(plan.groups, variants):
        for j, k in zip(g.units, g.variants[v]):
            choice[j] = k
    return tuple(choice)


def search(plan: LazyPlan, offsets: Sequence[int], cap: int,
           judge: Callable[[tuple[int, ...]], Sequence[Reads] | None]) -> Outcome:
    """Search one crash point (PLAN, feasible) with at most CAP executions. JUDGE(choice) runs the
    commands on a crash state (findings are the caller's) and returns their reads, or None when
    they cannot be trusted. A JUDGE raising OutOfTime (--budget) ends the search there (`cut`)."""
    rp = Replayer(plan, offsets)
    out = Outcome()
    nunits = len(plan.cp.units)
    start = tuple(len(g.variants) - 1 for g in plan.groups)     # every group: everything kept
    # (variants, branch points inherited, their (group, classes) shape, the class taken at the last)
    frontier: deque = deque([(start, 0, ())])
    while frontier:
        if out.executions >= cap:
            out.capped = True
            break
        variants, inherited, shape = frontier.popleft()
        choice = choice_of(plan, variants)
        try:
            reads = judge(choice)
        except OutOfTime:
            out.capped = out.cut = True
            break
        out.executions += 1
        branches, allowed = rp.replay(variants, reads) if reads is not None else ([], None)
        # (a command that did not retrace the branch points it inherited is not deterministic)
        if allowed is None or tuple((gi, len(c), t) for gi, c, t in branches[:inherited]) != shape:
            out.unknown += 1
            out.leaves.append(plan.single(choice))
            continue
        covers = 1
        for g, a in zip(plan.groups, allowed):
            covers *= legal_count(g.radices) if a is None else len(a)
        out.covered += covers
        out.leaves.append(Leaf((), (), allowed, covers, choice, plan.groups, nunits))
        for j in range(inherited, len(branches)):
            gi, classes, taken = branches[j]
            prefix = tuple((g, len(c), t) for g, c, t in branches[:j])
            for c, members in enumerate(classes):
                if c == taken:
                    continue
                child = list(variants)
                child[gi] = _rep(plan, gi, members)
                frontier.append((tuple(child), j + 1, prefix + ((gi, len(classes), c),)))
    return out


__all__ = ["Outcome", "Replayer", "choice_of", "search"]
