"""Shrinking a failing crash state to the fewest lost stores that still fail the same way, and
finding the persisted stores the failure needs.

Owns the search over one crash point's choice vectors: first let whole pending units persist,
then let each remaining unit keep as much as it can, checking candidates in batches (one pass over
the trace per batch). Hypothesis shrinks the history; this shrinks the crash state inside it.
Then `needed_pieces` asks, per unit that persisted some pending pieces, which of them the failure
needs (lose it and what follows it in its line, and the state passes): a non-atomic pair of
stores fails with either one persisted, so the lost stores plus the needed ones name the mistake
the same way in both orders (harness/triage/bugs.py groups bugs by them). A state that loses and
needs nothing is named by a store made durable earlier in its operation (`earliest_needed`), else
by the stores made after its crash point that it lacks (`lacking_pieces`).
"""
from __future__ import annotations

from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.crash_states import state_checker
from crashcheck.harness.check.findings import RECOVERY_CRASH_PREFIX, Finding
from crashcheck.harness.check.session import Session


def shrink_state(session: Session, trace: Trace, oracle: SequentialOracle, f: Finding,
                 history_cp: CrashPoint | None = None) -> None:
    """Move F to the state with the fewest lost pieces that still fails with F's class, judged by
    ORACLE at HISTORY_CP (default: F's crash point; for a crash inside recovery, the original
    crash in the history's trace)."""
    cp = f.point
    radices = cp.radices
    at = history_cp or cp
    check = state_checker(session, trace, cp.index, oracle.follow_text(at))

    def verdict(res):
        return oracle.verdict(at, res)
    failing = failing_as(check, verdict, f.cls)

    def release(choice: tuple[int, ...], moves: list[tuple[int, int]]) -> tuple[int, ...]:
        c = list(choice)
        for j, k in moves:
            c[j] = k
        return tuple(c)

    choice = tuple(f.choice)
    # 1. Units that can persist entirely, each alone; then all of them together.
    units = [j for j in range(len(choice)) if choice[j] < radices[j]]
    cands = [release(choice, [(j, radices[j])]) for j in units]
    ok = [j for j, good in zip(units, failing(cands) if cands else []) if good]
    if ok:
        together = release(choice, [(j, radices[j]) for j in ok])
        if len(ok) == 1 or failing([together])[0]:
            choice = together
        else:
            for j in ok:      # greedy, one at a time
                cand = release(choice, [(j, radices[j])])
                if failing([cand])[0]:
                    choice = cand
    # 2. For each unit still holding pieces back, the longest prefix that still fails.
    choice = keep_most(failing, choice, radices)
    if choice != tuple(f.choice):
        [res] = check([choice])
        v = verdict(res)
        pre = RECOVERY_CRASH_PREFIX if f.recovery_of is not None else ""
        f.choice, f.result, f.verdict, f.detail = choice, res, v, pre + v.detail
    if f.recovery_of is None:
        f.needed = needed_pieces(check, verdict, cp, f.choice)
        if not f.needed and cp.op is not None:
            f.needed_early = earliest_needed(
                operation_points(session, trace, cp),
                lambda p: state_checker(session, trace, p.index, oracle.follow_text(p)),
                lambda p, res: oracle.verdict(p, res), f.cls)
        if not f.needed and not f.needed_early and not f.lost and cp.op is not None:
            nxt = next_point(session, trace, cp)
            if nxt is not None:
                # the states at NXT are judged as crashes at CP, with CP's operation in flight:
                # the stores between them were made before it returned (at NXT an operation's
                # end, it is done and must show, so the stores that complete it would all look
                # lacking: a split's new leaf as well as the old child's slot)
                f.lacks = lacking_pieces(state_checker(session, trace, nxt.index, oracle.follow_text(cp)),
                                         lambda res: oracle.verdict(cp, res), nxt, cp.event, f.cls)


def failing_as(check, verdict, cls: str):
    """A judge of a list of choices: for each, whether CHECK's result fails with class CLS."""
    def failing(cands: list[tuple[int, ...]]) -> list[bool]:
        out = []
        for res in check(cands):
            v = verdict(res)
            out.append(not v.ok and v.cls == cls)
        return out
    return failing


def keep_most(failing, choice: tuple[int, ...], radices, whole: bool = False) -> tuple[int, ...]:
    """CHOICE with each unit that holds pieces back keeping the longest prefix that still fails
    (FAILING judges a list of choices), all of them together when that fails too, else the
    single unit's choice when only one moved. Keeping a whole unit is tried only with WHOLE
    (shrink_state tried those first)."""
    moves, cands = [], []
    for j in range(len(choice)):
        for k in range(radices[j] - (0 if whole else 1), choice[j], -1):
            moves.append((j, k))
            cands.append(tuple(k if i == j else c for i, c in enumerate(choice)))
    best: dict[int, int] = {}
    for (j, k), good in zip(moves, failing(cands) if cands else []):
        if good and k > best.get(j, -1):
            best[j] = k
    if best:
        together = tuple(best.get(i, c) for i, c in enumerate(choice))
        if len(best) == 1 or failing([together])[0]:
            return together
    return choice


# at most this many extra states are checked to find the needed pieces of one finding
NEEDED_BUDGET = 64


def needed_pieces(check, verdict, cp: CrashPoint, choice: tuple[int, ...]) -> list:
    """The pending pieces persisted in CHOICE that the failure needs: for each unit that kept
    some, the last piece of the shortest kept prefix that still fails, when keeping none of them
    passes. CHECK and VERDICT judge candidate choices as in shrink_state."""
    units = [j for j in range(len(choice)) if choice[j] > 0]
    cands, moves = [], []
    for j in units:
        for k in range(choice[j]):
            if len(cands) >= NEEDED_BUDGET:
                break
            c = list(choice)
            c[j] = k
            cands.append(tuple(c))
            moves.append((j, k))
    if not cands:
        return []
    fails: dict[tuple[int, int], bool] = {}
    for (j, k), res in zip(moves, check(cands)):
        fails[(j, k)] = not verdict(res).ok
    out = []
    for j in units:
        if (j, 0) not in fails or fails[(j, 0)]:
            continue          # keeping none of this unit's pieces still fails: none is needed
        k = next((k for k in range(1, choice[j]) if fails.get((j, k), True)), choice[j])
        out.append(cp.units[j].kept(k)[-1])   # the piece choice k adds (kept is in trace order)
    return out


# at most this many earlier crash points of the operation are tried by earliest_needed
EARLY_POINTS = 32


def operation_points(session: Session, trace: Trace, cp: CrashPoint) -> list[CrashPoint]:
    """The crash points of CP's operation before CP, latest first."""
    # the points before the operation began are simulated without their units (not wanted)
    begin = next((i for i in range(min(cp.event, len(trace.events)) - 1, -1, -1)
                  if trace.events[i].kind == "op_begin"), 0)
    out = []
    for p in Simulator.from_trace(trace, session.settings.options()).crash_points(skip_before=begin):
        if p.index >= cp.index:
            break
        if p.op == cp.op:
            out.append(p)
        elif out:
            out = []          # another operation in between: only CP's own stretch counts
    return out[::-1]


def earliest_needed(points: list, check_at, verdict, cls: str) -> list:
    """For a failure that needs no pending store persisted (its cause was durable before its
    crash point): the pieces it needs at the earliest crash point of its operation where keeping
    every pending store still fails with class CLS. POINTS are the operation's earlier crash
    points, latest first; CHECK_AT(point) gives a checker of choices there, VERDICT(point, result)
    the verdict. A key length lost after a slot was committed by its bit fails as well with
    nothing lost a few crash points earlier, where it needs the bit: that store is the cause."""
    best = None
    for p in points[:EARLY_POINTS]:
        if not p.units:
            continue
        check = check_at(p)
        choice = tuple(p.radices)
        [res] = check([choice])
        v = verdict(p, res)
        if v.ok or v.cls != cls:
            break
        best = (p, choice)
    if best is None:
        return []
    p, choice = best
    check = check_at(p)           # anew: a checker is valid until the next one is made
    return needed_pieces(check, lambda res: verdict(p, res), p, choice)


def next_point(session: Session, trace: Trace, cp: CrashPoint) -> CrashPoint | None:
    """The crash point after CP when it is still inside CP's operation (or at its end), else None."""
    sim = Simulator.from_trace(trace, session.settings.options())
    for p in sim.crash_points(skip_before=cp.event, wanted=lambda k: k == cp.index + 1):
        if p.index > cp.index:
            return p if p.op == cp.op or (p.kind == "op_end" and p.last_done == cp.op) else None
    return None


def lacking_pieces(check, verdict, p: CrashPoint, before: int, cls: str) -> list:
    """For a failure that loses and needs no store and whose cause was durable before its crash
    point (under eADR nothing is pending after a CAS drained the buffer: a leaf published before
    its key was written): the stores made after that point (trace event BEFORE) that the failure
    lacks, found at the next crash point P of its operation. There the state that keeps every
    piece made before BEFORE and none after is the failing state again; each unit then keeps the
    longest prefix that still fails with class CLS, and what stays lost is what the failure lacks
    (the leaf's key and value: the companions the publication came before). CHECK and VERDICT
    judge choices at P as in shrink_state; [] when that state does not fail so."""
    base = []
    for u in p.units:
        k = sum(1 for q in u.pieces if q.seq < before)
        if u.orders is not None and 0 < k < len(u.pieces):
            return []             # a memset's pieces split by the crash point: no prefix choice
        base.append(k if u.orders is None or k == 0 else u.choices - 1)
    base = tuple(base)
    failing = failing_as(check, verdict, cls)
    if base == tuple(p.radices) or not failing([base])[0]:
        return []
    return until_passing(check, verdict, p, keep_most(failing, base, p.radices, whole=True))


def until_passing(check, verdict, p: CrashPoint, choice: tuple[int, ...]) -> list:
    """The pieces CHOICE loses at P, cut per unit at the shortest longer prefix that passes: a unit
    persists as a prefix, so what it stores after the store that makes the failure pass is lost
    with it only because it comes later (under eADR a split's parent published empty is filled,
    and then the new leaf written: the failure lacks the parent's slot, not the leaf's key,
    which another bug may have put after the publication). A unit with no passing prefix loses
    all it lost."""
    out = []
    for j, u in enumerate(p.units):
        longer = [tuple(k if i == j else c for i, c in enumerate(choice))
                  for k in range(choice[j] + 1, p.radices[j] + 1)]
        passing = [cand[j] for cand, res in zip(longer, check(longer) if longer else []) if verdict(res).ok]
        kept_later = {id(q) for q in u.lost(passing[0])} if passing else set()
        out += [q for q in u.lost(choice[j]) if id(q) not in kept_later]
    return sorted(out, key=lambda q: q.seq)      # trace order (a unit's own pieces are in it already)


__all__ = ["EARLY_POINTS", "earliest_needed", "failing_as", "keep_most", "lacking_pieces", "needed_pieces", "next_point",
           "operation_points", "shrink_state", "until_passing"]
