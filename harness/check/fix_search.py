"""The fix of an ordering bug, searched on the trace and proven there.

Owns, for a shrunk finding whose failing crash state loses stores, the search for the smallest
change of the code's persistence instructions that forbids the failure, and its proof: each
candidate is an edit of the source lines (add a flush of the lost store's line, a fence, both,
after the store or after the call of the inlined function holding it; flush the new objects whole
before the fence that follows it; add them before the store that depends on it; move an existing
fence above that store; make that store the commit of a two-step update: persist what came before,
publish, persist the publication; persist the new object that store publishes whole before it;
harness/check/fix_edits.py),
applied to every execution of those lines in the traced history (crashsim/trace_edit.py). The
edited trace is simulated and every crash state of the history is checked again, with the same
runner, oracle and judge as fuzzing (the lazy strategy, so one execution per class of states). A
candidate under which every state passes is a fix proven for that history. Candidates are tried
in order: first persisting a new object before the store that publishes it when the code flushes
the lost line itself only after that store (swing-first: the order is wrong there, and a flush
added after the lost store would fix only the lines one history happened to build); then the
fewest instructions, then an edit at the lost store's own code before one at the
store that depends on it (the fix names the cause), then the latest; within a budget of
candidates and seconds. An edit is named by source lines, so the same edit can be proven on the
next failing histories of the bug too (`prove`).

A finding that is not about ordering gets no fix search: no crash state (a crash-free run's
logic error), no lost store, a leak, a crash inside recovery, or a failure the same operations
show without any crash (harness/check/without_crash.py). Never builds records or reports.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.runner_client import Stopped
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.crash_oracle import SequentialOracle
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.fix_edits import FENCES, Edit, calls_at, published, trace_edit, trace_keys
from crashcheck.harness.check.fix_words import address_of, describe, statement
from crashcheck.harness.check.judging import HistoryJudge
from crashcheck.harness.check.session import Session
from crashcheck.harness.check.unmask import Explainer, Known
from crashcheck.harness.core.budget import OutOfTime

# candidates tried per finding, and seconds spent, before the search says it found none
MAX_CANDIDATES = 32
MAX_SECONDS = 60.0


@dataclass
class Candidate:
    edits: tuple[Edit, ...]
    rank: int            # 0: at the lost store's own code; 1: at the store that depends on it
    position: float      # the edit's event index in the failing history (later is preferred)
    # the lost store's line is flushed by the code itself, after a store that publishes the new
    # object it lies in: the order is wrong at the publication, so persisting the object before
    # that store is the fix that names the cause, tried before the cheaper ones (a flush added
    # after the lost store would flush the line twice, and only the lines one history built)
    publish_first: bool = False

    @property
    def key(self) -> tuple:
        return (not self.publish_first, sum(e.instructions for e in self.edits), len(self.edits), self.rank,
                -self.position)


@dataclass
class FixResult:
    """What the search found for one finding: the proven edits (none: not found), the histories
    they were proven for and those they were not, how many candidates it tried and how long."""
    edits: tuple[Edit, ...] = ()
    statements: list[str] = field(default_factory=list)
    proven_for: list[list[str]] = field(default_factory=list)      # histories, op texts
    failed_for: list[list[str]] = field(default_factory=list)
    tried: int = 0
    rejected: list[str] = field(default_factory=list)                # candidates a state still failed
    seconds: float = 0.0
    complete: bool = True           # every legal state of each history was checked (no sampled point)
    reason: str = ""                # without edits: why none
    # the candidates after the one found, not tried: the next to try when the fix fails on
    # another history of the bug (harness/run/fix_checks.py)
    remaining: list[tuple[Edit, ...]] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.edits)


def about_ordering(f: Finding) -> bool:
    """F is a crash state that loses stores and fails for it (the module doc says which not)."""
    return (f.point is not None and f.recovery_of is None and f.cls != "leak" and not f.expected
            and bool(f.lost) and f.without_crash is None)


# -- the candidates -------------------------------------------------------------------------

def candidates(trace: Trace, f: Finding) -> list[Candidate]:
    """The edits that could forbid F's failing state, in the order they are tried."""
    ev = trace.events
    keys = trace_keys(trace)
    crash = f.point.event
    ls = trace.line_size
    out: dict[tuple[Edit, ...], Candidate] = {}

    def add(edits: tuple[Edit, ...], rank: int, position: float, publish_first: bool = False) -> None:
        if edits not in out:
            out[edits] = Candidate(edits, rank, position, publish_first)

    lost_sites: list[tuple[str, int]] = []
    for p in f.lost:
        k = keys[p.seq]
        if k != "?" and all(k != s for s, _ in lost_sites):
            lost_sites.append((k, p.seq))
    # the stores the failure needs persisted: the ones that depend on what was lost
    deps: list[tuple[str, int]] = []
    for p in list(f.needed) + list(f.needed_early):
        k = keys[p.seq]
        if k != "?" and all(k != s for s, _ in deps) and all(k != s for s, _ in lost_sites):
            deps.append((k, p.seq))
    # what a persist-object-before at each store the failure needs would flush there
    publishes = published(trace, {d for _, d in deps})
    for s_key, s in lost_sites:
        x = ev[s]
        line = x.addr - x.addr % ls
        flush_at = next((j for j in range(s + 1, min(crash + 1, len(ev)))
                         if ev[j].kind == "flush" and ev[j].tid == x.tid and ev[j].addr == line), None)
        fence_at = next((j for j in range(s + 1, min(crash + 1, len(ev)))
                         if ev[j].kind == "fence" and ev[j].tid == x.tid and ev[j].sub in FENCES), None)
        if flush_at is not None and keys[flush_at] != "?":
            add((Edit("fence-after", keys[flush_at]),), 0, flush_at)
        fenced = fence_at is not None or (f.point.kind == "fence" and crash < len(ev) and ev[crash].tid == x.tid)
        if fence_at is not None and keys[fence_at] != "?":
            # the fence that should have made it durable: flush the whole object before it
            add((Edit("flush-object", keys[fence_at], s_key),), 0, fence_at)
        if fenced:
            add((Edit("flush-after", s_key),), 0, s)
        add((Edit("persist-after", s_key),), 0, s)
        # the store is in a function inlined into its caller: the edit may go after the call
        # instead, in the function that decides to persist (a helper used elsewhere stays as it is)
        site = trace.site(x.site)
        call = f"{site.inlined_file}:{site.inlined_line}" if site is not None and site.inlined_line else None
        if call is not None and call != s_key:
            end = s
            while end + 1 < len(ev) and calls_at(trace, ev[end + 1]) == call:
                end += 1
            # (after the call returns is later than after the store inside it)
            if fenced:
                add((Edit("flush-after", call, "call"),), 0, end + 0.5)
            add((Edit("persist-after", call, "call"),), 0, end + 0.5)
        for d_key, d in deps:
            if d < s:
                continue
            if flush_at is not None and flush_at < d:
                add((Edit("fence-before", d_key),), 1, d)
            add((Edit("persist-before", d_key, s_key),), 1, d)
            g = next((j for j in range(d + 1, len(ev)) if ev[j].kind == "fence" and ev[j].tid == ev[d].tid
                      and ev[j].sub in FENCES), None)
            if g is not None and keys[g] != "?" and keys[g] != d_key:
                add((Edit("move-fence", d_key, keys[g]),), 1, d)
            add((Edit("commit", d_key),), 1, d)
            objs, lines = publishes.get(d, ([], []))
            if line in lines:
                # D publishes the new object the lost store wrote into: persist it whole before D
                first = next((o for o in objs if o[0] <= x.addr < o[0] + o[1]), objs[0])
                late = False              # the code flushes the line itself, later in the operation
                for j in range(d + 1, len(ev)):
                    if ev[j].tid == x.tid and (ev[j].kind == "op_end" or (ev[j].kind == "flush" and ev[j].addr == line)):
                        late = ev[j].kind == "flush"
                        break
                add((Edit("persist-object-before", d_key, keys[first[2]]),), 1, d, late)
    if len(lost_sites) > 1:
        add(tuple(Edit("persist-after", k) for k, _ in lost_sites), 0, max(s for _, s in lost_sites))
    return sorted(out.values(), key=lambda c: c.key)


# -- proving --------------------------------------------------------------------------------

def passes(session: Session, trace: Trace, oracle: SequentialOracle, edits: tuple[Edit, ...],
           also: tuple[Edit, ...] = (), known: Known | None = None) -> tuple[bool, bool, str]:
    """Whether every crash state of TRACE with EDITS (and ALSO: the fixes of other bugs already
    proven, which unmask this one) passes ORACLE's judgement (leaks are bugs of their own and not
    counted; with KNOWN, neither are the failing states other bugs' minimal lost stores explain,
    harness/check/unmask.py): (passes, every legal state was checked, the first failure)."""
    edited = trace_edit(trace, tuple(edits) + tuple(e for e in also if e not in edits)).apply(trace)
    explainer = Explainer(known, edited, session.settings.options()) if known else None
    first_op = next((i for i, ev in enumerate(edited.events) if ev.kind == "op_begin"
                     and ev.addr == getattr(oracle.ops, "load", 0)), len(edited.events))
    runner = session.runner(trace)
    s = session.settings
    strategy = "lazy" if runner.lazy_supported else s.strategy
    judge = HistoryJudge(session, edited, oracle)
    per_point: dict[int, list[int]] = {}
    gen = explore(edited, options=s.options(), strategy=strategy, limit=s.limit, seed=s.seed, runner=runner,
                  followup=oracle.follow_text, first_state=session.free_state_id(), start_event=first_op,
                  stop=session.budget.expired, relocatable=session.structure.own_pool)
    try:
        for out in gen:
            session.next_state = out.id + 1
            entry = per_point.setdefault(out.point.index, [out.point.legal, 0])
            entry[1] += getattr(out, "covers", 1)
            bad = [x for x in judge.judge(out) if x.cls != "leak" and not x.expected]
            if bad and explainer is not None and explainer.explains(out.point, out.choice):
                continue
            if bad or judge.unchecked:
                return False, False, bad[0].detail if bad else "a verdict could not be reached"
    finally:
        gen.close()
        if not runner.closed:
            runner.flush()      # answers of states queued before an early return, not wanted
    return True, all(seen >= legal for legal, seen in per_point.values()), ""


def search_fix(session: Session, trace: Trace, oracle: SequentialOracle, f: Finding,
               max_candidates: int = MAX_CANDIDATES, max_seconds: float = MAX_SECONDS,
               also: tuple[Edit, ...] = (), known: Known | None = None) -> FixResult | None:
    """The first candidate (in candidates' order) under which every crash state of F's history
    passes, or a result saying none was found; None for a finding not about ordering. ALSO: the
    proven fixes of the run's other bugs, applied with every candidate (in code with several
    bugs, a history that shows this one usually shows another too: fixed in simulation, it no
    longer masks whether a candidate removes this one). KNOWN: other bugs without a proven fix,
    whose failing states (by their minimal lost stores) are left out of the judgement (passes)."""
    if not about_ordering(f):
        return None
    t0 = time.monotonic()
    result = FixResult()
    history = [oracle.model.op_text(op) for op in oracle.ops]
    cands = candidates(trace, f)
    for n, c in enumerate(cands):
        if result.tried >= max_candidates or time.monotonic() - t0 > max_seconds:
            result.reason = (f"no candidate passed within the budget ({result.tried} of {len(cands)} "
                             f"tried, {max_candidates} candidates / {max_seconds:.0f} s)")
            break
        result.tried += 1
        try:
            ok, complete, why = passes(session, trace, oracle, c.edits, also, known)
        except (Stopped, OutOfTime):
            result.reason = f"the run's time ran out after {result.tried - 1} candidates"
            break
        if ok:
            result.edits, result.complete = c.edits, complete
            result.statements = [statement(trace, e) for e in c.edits]
            result.proven_for.append(history)
            result.remaining = [x.edits for x in cands[n + 1:]]
            break
        result.rejected.append(f"{describe(c.edits)}: {why}")
    else:
        if not result.found:
            result.reason = f"none of the {len(cands)} candidates forbids every failing state"
    result.seconds = time.monotonic() - t0
    return result


def prove(session: Session, trace: Trace, oracle: SequentialOracle, edits: tuple[Edit, ...],
          also: tuple[Edit, ...] = ()) -> bool | None:
    """Whether EDITS (found on another history; with ALSO, other bugs' fixes) make every crash
    state of this one pass; None when the run's time ran out first."""
    try:
        return passes(session, trace, oracle, edits, also)[0]
    except (Stopped, OutOfTime):
        return None



__all__ = ["Candidate", "Edit", "FixResult", "about_ordering", "address_of", "candidates", "describe",
           "passes", "prove", "search_fix", "statement", "trace_edit"]
