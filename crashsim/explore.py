"""The streaming pipeline the harness uses: trace -> crash points -> states -> results.

Owns: driving the simulator, a strategy, the image cache and (optionally) a Runner together, in
order, with bounded memory for the states in flight.

    for out in explore(trace, runner=runner, strategy="bounded", limit=64, seed=1):
        if out.result and not out.result.ok: ...

Each yielded StateOutcome names its crash point, its choice vector, a session-unique state id and
its result. With strategy "lazy" (crashcheck.crashsim.lazy) each outcome is one execution standing for a
class of `covers` states; its choice is the member with the fewest lost pieces. A crash point's
search runs at most `limit` executions, and stops as soon as its open branches outnumber the
executions left (crashcheck.crashsim.lazy.PROBE executions at a point whose pending lines include those of an
earlier partial point); one that stops short (partial) then gets the bounded
sample's states outside its classes, one outcome each, so it is never checked less than
"bounded" would check it, and its covered count (classes plus those states) stays exact. States
whose image (and followup) equals one already checked, at this or an earlier crash point, are not sent to the runner: they reuse that result (`cached_from`), and still count
as explored. Results arrive in batches, so outcomes are yielded a batch at a time, in state order.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator

from .image import decode_writes, encode_writes
from .keeping import KeptPoint
from .lazy import EAGER_BELOW, PROBE, LazyPlan, Leaf, MemoGate, PartialShapes, PointSearch, ReadMemo, bare_spec
from .persistency import ModelOptions, Piece
from .runner_client import CheckResult, Runner, Stopped
from .simulate import CrashPoint, Simulator
from .states import DEFAULT_LIMIT, STRATEGIES, Choice, StateCodec, select
from .trace import Trace, TraceError, read_trace

Followup = str | Callable[[CrashPoint], str]


@dataclass
class StateOutcome:
    """One explored crash state and, with a runner, its check result."""
    point: CrashPoint
    choice: Choice
    id: int
    fp: int                              # fingerprint of the post-crash image
    cached_from: int | None              # earlier state with the same image and followup, or (with
    #                                      `remembered`) an earlier execution whose check read the same
    result: CheckResult | None = None
    followup: str = ""
    covers: int = 1                      # lazy: crash states of this execution's class
    decisions: tuple[int, ...] | None = None   # lazy: the execution's decision list
    leaf: Leaf | None = None             # lazy: the class this execution stands for
    remembered: bool = False             # lazy: answered by ReadMemo (what an earlier check read)

    @property
    def kept(self) -> list[Piece]:
        """Pending pieces this state keeps (beyond the guarantee), in trace order."""
        return self.point.kept(self.choice)

    @property
    def lost(self) -> list[Piece]:
        """Pending pieces this state drops, in trace order."""
        return self.point.lost(self.choice)


@dataclass
class Progress:
    points_done: int
    points_total: int
    legal: int            # legal states over the crash points done (exact)
    explored: int         # states chosen by the strategy
    checked: int          # states sent to the runner and answered
    cached: int           # explored states answered from the image cache
    elapsed: float
    executions: int = 0   # lazy: checker executions
    covered: int = 0      # lazy: legal states covered by finished executions' classes
    complete: int = 0     # lazy: crash points whose classes covered every legal state
    partial: int = 0      # lazy: crash points left partly covered (limit, fallback, unknown class)


def _load(source: Trace | str | Path) -> Trace:
    if isinstance(source, Trace):
        return source
    return read_trace(source)


def explore(source: Trace | str | Path | Simulator, *, options: ModelOptions | None = None,
            strategy: str = "bounded", limit: int = DEFAULT_LIMIT, seed: int = 0,
            runner: Runner | None = None, followup: Followup = "",
            progress: Callable[[Progress], None] | None = None, batch: int = 256,
            cache: bool = True, first_state: int | None = None,
            start_event: int = 0, stop: Callable[[], bool] | None = None,
            allow_cut: bool = False, executions: int | None = None,
            points: Callable[[CrashPoint], bool] | None = None,
            relocatable: bool = False,
            hang_limit: tuple[int, int, int] | None = None,
            keep: Callable[[CrashPoint], KeptPoint | None] | None = None) -> Iterator[StateOutcome]:
    """Stream every explored state of a trace, with results when RUNNER is given.

    source      a Trace, a trace file, or a fresh Simulator over events in memory (then
                `options` is the simulator's own and must not be given)
    options     the persistency model (crashcheck.crashsim.persistency.ModelOptions; default x86-ADR)
    strategy    "exhaustive", "bounded" (see crashcheck.crashsim.states) or "lazy" (crashcheck.crashsim.lazy; needs a
                runner whose driver was compiled with check loads)
    limit, seed the bounded strategy's state limit per crash point and its seed
    runner      a started Runner whose pool matches the trace's; its base is (re)loaded here
    followup    text attached to every state, or a function of the crash point
    progress    called after every crash point and at the end
    batch       states sent to the runner per exchange
    cache       reuse results for repeated images (turn off to check every state)
    first_state the first state id; by default 0, or the runner's next free id (ids must
                increase within one runner session)
    start_event crash points before this event index are simulated (the image stays in step)
                but not explored: set-up such as pool formatting or a history's load phase
    stop        polled between states and while waiting for the runner: once it returns True,
                the runner is killed and Stopped is raised (states not yet yielded are lost;
                a huge crash point then ends partly explored instead of stalling the run)
    allow_cut   explore a trace whose tail is cut (the program died mid-run) up to the cut; by
                default such a trace is a TraceError, so a cut never reads as "checked"
    executions  lazy: executions per crash point before the point is left partial (default
                LIMIT); a partial point also gets the bounded strategy's sample (LIMIT, SEED)
                less the states its classes covered, each checked on its own
    points      explore only the crash points it accepts (the others are simulated, as with
                start_event)
    relocatable the structure keeps no absolute addresses in its pool (it maps the pool itself,
                as libpmemobj does), so the trace's pool may lie at another address than the
                runner's; by default the addresses must match
    hang_limit  (timeout_ms, after, short_ms): the runner's limit (Runner.queue_limit), set once
                before the trace's first crash point, so once AFTER checks of the trace ran out
                of time, its other states get SHORT_MS (harness/check/hangs.py reads the answers)
    keep        explore, of each crash point, only the states of the point it returns
                (crashcheck.crashsim.keeping: those that keep given pieces), or all of them when it
                returns None; each outcome still names the whole point and its choice vector there
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r} (known: {', '.join(STRATEGIES)})")
    if strategy == "lazy" and (runner is None or not runner.lazy_supported):
        raise TraceError("the lazy strategy needs a runner whose driver was compiled with check loads"
                         if runner is not None else "the lazy strategy needs a runner: it explores "
                         "by running recovery")
    if isinstance(source, Simulator):
        if options is not None:
            raise ValueError("explore(Simulator, options=...): the simulator already has its options")
        sim = source
        if runner is not None:
            if sim.image.size != runner.pool_size:
                raise TraceError(f"image of {sim.image.size} bytes does not match the runner's pool "
                                 f"({runner.pool_size} bytes)")
            # No image file: start from an all-zero pool and patch in the initial image.
            runner.queue_base(os.devnull)
            writes = _nonzero_pages(sim.image.base)
            if writes:
                runner.queue_patch(encode_writes(writes))
    else:
        trace = _load(source)
        if not trace.complete and not allow_cut:
            raise TraceError(f"{trace.path}: the trace is cut short ({trace.cut_reason}): only the crash "
                             "points before the cut could be explored, so it is not explored at all "
                             "(allow_cut=True explores it up to the cut on purpose)")
        sim = Simulator.from_trace(trace, options)
        if runner is not None:
            if not trace.regions:
                raise TraceError(f"{trace.path}: the trace registered no PM region, nothing to check")
            region = trace.regions[0]
            if (region.base != runner.pool_base and not relocatable) or sim.image.size != runner.pool_size:
                raise TraceError(f"{trace.path}: pool 0x{region.base:x} ({sim.image.size} bytes with "
                                 f"{len(trace.regions)} region{'s' if len(trace.regions) != 1 else ''}) "
                                 f"does not match the runner's 0x{runner.pool_base:x} "
                                 f"({runner.pool_size} bytes)")
            queue_initial_image(runner, trace, sim)
    if first_state is None:
        first_state = runner.next_state if runner is not None else 0
    outcomes = _explore(sim, strategy, limit, seed, runner, followup, progress, batch, cache, first_state,
                        start_event, stop, executions, points, hang_limit, keep)
    return outcomes if keep is None else _to_whole(outcomes)


def _to_whole(outcomes: Iterator[StateOutcome]) -> Iterator[StateOutcome]:
    """OUTCOMES with the states of a restricted point (KeptPoint) named in their whole point, as
    every state outside explore is (a finding's point and choice are replayed on the trace). Their
    `leaf` stays the restricted point's class (explore's own bookkeeping)."""
    for out in outcomes:
        if isinstance(out.point, KeptPoint):
            out.choice = out.point.whole_choice(out.choice)
            out.point = out.point.whole
        yield out


def queue_initial_image(runner: Runner, trace: Trace, sim: Simulator) -> None:
    """Bring RUNNER's base to SIM's initial image of TRACE: region 0's image file, then the
    regions past it (crashcheck.crashsim.layout) as a patch of their non-zero pages."""
    size = trace.regions[0].size
    runner.queue_base(trace.regions[0].image)
    writes = _nonzero_pages(memoryview(sim.image.base)[size:], start=size)
    if writes:
        runner.queue_patch(encode_writes(writes))


def _nonzero_pages(image, page: int = 4096, start: int = 0) -> list[tuple[int, bytes]]:
    """(START + offset, page) of IMAGE's pages that are not all zero."""
    zero = bytes(page)
    out = []
    for off in range(0, len(image), page):
        chunk = bytes(image[off:off + page])
        if chunk != zero[:len(chunk)]:
            out.append((start + off, chunk))
    return out


def _explore(sim: Simulator, strategy: str, limit: int, seed: int, runner: Runner | None,
             followup: Followup, progress: Callable[[Progress], None] | None, batch: int,
             cache: bool, next_id: int, start_event: int = 0,
             stop: Callable[[], bool] | None = None,
             executions: int | None = None,
             points: Callable[[CrashPoint], bool] | None = None,
             hang_limit: tuple[int, int, int] | None = None,
             keep: Callable[[CrashPoint], KeptPoint | None] | None = None) -> Iterator[StateOutcome]:
    t0 = time.monotonic()
    cap = limit if executions is None else executions
    if strategy == "lazy" and (cap < 1 or limit < 1):
        raise ValueError(f"lazy: the state limit and the executions per crash point must be at least "
                         f"1, not {limit} and {cap}")
    total = sim.count_crash_points() if progress else 0
    seen: dict[tuple[int, str], int] = {}          # (fp, followup) -> first state id
    # lazy: (guaranteed image, plan, followup) -> the point's executions (decisions, first id)
    lazy_seen: dict[tuple, list[tuple[tuple[int, ...], int]]] = {}
    shapes = PartialShapes()       # lazy: pending lines of the points that came out partial
    contents: dict = {}            # lazy: line groups' variant contents (LazyPlan._contents)
    results: dict[int, CheckResult] = {}           # first state id -> its result
    waiting: list[StateOutcome] = []
    # lazy: earlier executions' answers, by the lines their checks read (off: CRASHCHECK_LAZY_MEMO=0),
    # each of its lookups kept only while it pays (MemoGate; CRASHCHECK_LAZY_MEMO=always: kept)
    memo_env = os.environ.get("CRASHCHECK_LAZY_MEMO", "1")
    memo = ReadMemo(sim.line_size) if (strategy == "lazy" and cache and runner is not None and
                                       memo_env != "0") else None
    gate = MemoGate(always=memo_env == "always")
    # With the memo, states checked on their own go as LAZY requests without undetermined lines,
    # whose answers carry the read log: (state id, followup, writes) until answered. They are
    # answered before the image moves on to the next crash point (the memo hashes this one).
    logged: list[tuple[int, str, bytes]] = []
    bare = bare_spec(sim.line_size)
    stats = Progress(0, total, 0, 0, 0, 0, 0.0)

    # The runner answers a batch only when it has checked all of it, and a check that hangs takes
    # the whole per-state timeout: with a time budget (STOP), batches start at one state and
    # double while no check of an exchange ran out of time, halving when one did, so answers keep
    # arriving before the deadline instead of dying with a batch of hung checks. Never by the
    # clock: where a point's lazy search stops, and which answers the memo holds when a state is
    # looked up, follow the batch sizes, so sizes that followed the load made one --examples run
    # count 2,635 failing states and the same run under Dask 2,637.
    size = [1 if stop is not None else batch]

    def drain() -> Iterator[StateOutcome]:
        if runner is not None:
            answers = runner.flush(stop)
            for sid, res in answers:
                results[sid] = res
                stats.checked += 1
            size[0] = _next_size(size[0], batch, answers)
            for out in waiting:
                out.result = results[out.id if out.cached_from is None else out.cached_from]
            for sid, fu_, writes in logged:
                res = results.get(sid)
                if res is not None and gate.keeps:
                    memo.add(fu_, res.lazy, sim.image.base, decode_writes(writes) if writes else (), sid, res)
            logged.clear()
        yield from waiting
        waiting.clear()

    fixed = followup if isinstance(followup, str) else None
    if runner is not None and hang_limit is not None:
        # once, for the whole trace: the runner counts the checks out of time over every crash
        # point (nothing below sends a base, which would put back the runner's own limit)
        runner.queue_limit(*hang_limit)
    for cp in sim.crash_points(skip_before=start_event if points is None else 0):
        if runner is not None and cp.patch:
            runner.queue_patch(encode_writes(cp.patch))
        if cp.event < start_event or (points is not None and not points(cp)):
            continue
        stats.legal += cp.legal
        if keep is not None:
            # (after the patch: the runner's base is the whole point's guaranteed image, which is
            # the restricted point's too)
            kept = keep(cp)
            if kept is not None:        # (KEEP's caller counts what it left out)
                cp = kept
        fu = fixed if fixed is not None else followup(cp)
        codec = StateCodec(cp, sim.image)
        encode = codec.encode
        plan = LazyPlan(cp, sim.image, contents) if strategy == "lazy" else None
        covers, whole = 1, None
        if plan is not None and plan.feasible and plan.sent and cp.legal > EAGER_BELOW:
            yield from drain()
            hit = None
            if memo is not None and gate.points:
                hit = memo.find(fu, sim.image.base, plan.pending_lines(), contents=plan.contents)
                gate.count_point(hit is not None)
            leaves: list[Leaf] = []
            if hit is not None:
                # the check of an earlier execution read none of this point's pending lines and
                # the same bytes elsewhere: its answer is every legal state's here
                leaves.append(plan.leaf((), {"branches": [], "allowed": []}))
                yield _reused(cp, leaves[0], next_id, encode, fu, hit.sid, hit.result, stats, runner, remembered=True)
                next_id += 1
            key = (cp.fp, plan.key, fu) if cache and hit is None else None
            lines = frozenset(plan.pending_lines())
            for out in () if hit is not None else \
                    _lazy_point(plan, runner, encode, fu, next_id, size, stats, stop,
                                min(cap, PROBE) if shapes.predicts(lines) else cap, lazy_seen, key):
                next_id = out.id + 1
                leaves.append(out.leaf)
                if memo is not None and gate.keeps and out.cached_from is None and out.result is not None:
                    memo.add(fu, out.result.lazy, sim.image.base, decode_writes(encode(out.leaf.choice)[1]),
                             out.id, out.result)
                yield out
            if sum(leaf.covers for leaf in leaves) == cp.legal:
                stats.complete += 1
                stats.points_done += 1
                if progress:
                    stats.elapsed = time.monotonic() - t0
                    progress(stats)
                continue
            # Partial (the cap, or an execution whose class is not known): the bounded sample of
            # the point too, less the states its classes covered, each checked on its own.
            stats.partial += 1
            shapes.add(lines)
            choices = [c for c in select(cp, "bounded", limit, seed, stop)
                       if not any(leaf.contains(c) for leaf in leaves)]
        elif plan is not None and plan.feasible and plan.sent:
            choices = select(cp, "exhaustive")       # small: state by state, each its own class
            stats.complete += 1
        elif plan is not None and plan.feasible:
            # nothing recovery could read differently (no pending line in the pool): every legal
            # state recovers alike, one state stands for all (and the image cache applies)
            whole = plan.leaf((), {"branches": [], "allowed": []})
            choices: Iterator[Choice] | list[Choice] = [whole.choice]
            covers = cp.legal
            stats.complete += 1
        elif plan is not None:
            stats.partial += 1     # too big to plan: a bounded sample of it
            choices = select(cp, "bounded", limit, seed, stop)
        else:
            choices = select(cp, strategy, limit, seed, stop)
        for choice in choices:
            if stop is not None and stop():
                if runner is not None:
                    runner.close(kill=True)      # its queue holds requests nobody will read
                raise Stopped(f"stopped at crash point {cp.index} after {stats.explored} states")
            fp, writes = encode(choice)
            sid = next_id
            next_id += 1
            first = seen.get((fp, fu)) if cache else None
            hit = None
            logs = memo is not None and gate.states
            if first is None and logs:
                hit = memo.find(fu, sim.image.base, set(), decode_writes(writes) if writes else ())
                gate.count_state(hit is not None)
                if hit is not None:
                    first = hit.sid
                    results[first] = hit.result
            if first is None:
                stats.executions += 1
                seen[(fp, fu)] = sid
                if runner is not None and logs:
                    runner.queue_lazy(sid, bare, fu, writes)
                    logged.append((sid, fu, writes))
                elif runner is not None:
                    runner.queue_state(sid, writes, fu)
            else:
                stats.cached += 1
                if runner is not None and sid >= runner.next_state:
                    runner.next_state = sid + 1      # reserve the id: dup_of may not name it
            leaf = whole if whole is not None or plan is None or not plan.feasible else plan.single(choice)
            waiting.append(StateOutcome(cp, choice, sid, fp, first, None, fu, covers,
                                        None if leaf is None else (), leaf, hit is not None))
            stats.covered += covers
            stats.explored += 1
            # Drain when a batch of checks is queued, or when cache hits alone pile up.
            if runner is None or runner.queued_states >= size[0] or len(waiting) >= 16 * batch:
                if len(waiting) >= size[0]:
                    yield from drain()
        if (runner is None and waiting) or logged:
            yield from drain()
        stats.points_done += 1
        if progress:
            stats.elapsed = time.monotonic() - t0
            progress(stats)
    yield from drain()
    if progress:
        stats.elapsed = time.monotonic() - t0
        progress(stats)


def _reused(cp: CrashPoint, leaf: Leaf, sid: int, encode, fu: str, first: int, res: CheckResult,
            stats: Progress, runner: Runner, decisions: tuple[int, ...] = (),
            remembered: bool = False) -> StateOutcome:
    """The outcome of class LEAF answered by earlier execution FIRST (RES) without a run: the same
    search at an earlier point, or (REMEMBERED) an execution whose check read the same bytes."""
    if sid >= runner.next_state:
        runner.next_state = sid + 1                  # reserve the id: dup_of may not name it
    fp, _ = encode(leaf.choice)
    stats.cached += 1
    stats.explored += 1
    stats.covered += leaf.covers
    return StateOutcome(cp, leaf.choice, sid, fp, first, res, fu, leaf.covers, decisions, leaf, remembered)


def _next_size(size: int, cap: int, answers) -> int:
    """The next batch size after an exchange of SIZE whose ANSWERS came back: half when a check
    ran out of its time limit, else double, up to CAP (a rule of the answers, not the clock)."""
    if any(res is not None and res.status == "timeout" for _, res in answers):
        return max(1, size // 2)
    return min(cap, size * 2)


def _lazy_point(plan: LazyPlan, runner: Runner, encode, fu: str, next_id: int, size: list[int],
                stats: Progress, stop: Callable[[], bool] | None, limit: int,
                seen: dict, key: tuple | None) -> Iterator[StateOutcome]:
    """Search one crash point lazily: executions in batches (each answer opens its siblings),
    until the decision tree is done or cannot be done within LIMIT executions (then the point is
    partial whatever runs next, and the executions left are better spent on the bounded sample).
    A point whose guaranteed image, plan and followup equal an earlier point's search gets that
    search's results (SEEN, KEY), complete or not. The caller counts the point complete or partial
    from the classes yielded."""
    cp = plan.cp
    search = PointSearch(plan)
    earlier = seen.get(key) if key is not None else None
    if earlier is not None:
        for decisions, first, res in earlier:
            leaf = search.done(decisions, res.lazy)
            search.frontier.clear()
            yield _reused(cp, leaf, next_id, encode, fu, first, res, stats, runner, decisions)
            next_id += 1
        return
    done: list[tuple[tuple[int, ...], int, CheckResult]] = []
    # The point's groups cross the pipe once (its executions differ only in their decisions);
    # the body goes with the first batch, so it costs no round trip of its own.
    stored = runner.lazy_body_supported
    if stored:
        runner.queue_lazy_body(plan.body())
    while search.frontier and not search.hopeless(limit):
        if stop is not None and stop():
            runner.close(kill=True)
            raise Stopped(f"stopped at crash point {cp.index} after {search.executions} executions")
        batch: list[tuple[int, tuple[int, ...]]] = []
        while search.frontier and len(batch) < max(size[0], 1) and search.executions + len(batch) < limit:
            decisions = search.frontier.popleft()
            sid = next_id
            next_id += 1
            runner.queue_lazy(sid, plan.spec_stored(decisions) if stored else plan.spec(decisions), fu)
            batch.append((sid, decisions))
        answers = runner.flush(stop)
        results = dict(answers)
        size[0] = _next_size(size[0], 256, answers)
        for sid, decisions in batch:
            res = results[sid]
            done.append((decisions, sid, res))
            leaf = search.done(decisions, res.lazy)
            fp, _ = encode(leaf.choice)
            stats.checked += 1
            stats.executions += 1
            stats.explored += 1
            stats.covered += leaf.covers
            yield StateOutcome(cp, leaf.choice, sid, fp, None, res, fu, leaf.covers, decisions, leaf)
    if key is not None:
        seen[key] = done
