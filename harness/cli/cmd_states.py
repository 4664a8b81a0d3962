"""`crashcheck states TRACE`: the crash points of a trace and the crash states a strategy explores.

Owns the human and JSON views of crash-state enumeration; the rules are crashsim's. Per crash
point: event index, kind, operation in flight, pending lines, legal states (exact), explored states,
and how many of those repeat an image already seen (they would be answered from the cache).
With --strategy lazy the states are told apart by running recovery (crashsim/lazy.py), so it needs
the structure's driver (--structure or --driver): per crash point, the executions lazy exploration
runs, the outcomes answered without a run instead (the image cache, the read memo: not
executions, nothing ran), and
whether their classes cover every legal state.
"""
from __future__ import annotations

import argparse
import json
import sys

from crashcheck.crashsim.persistency import ModelError, ModelOptions, Piece
from crashcheck.crashsim.simulate import CrashPoint, Simulator
from crashcheck.harness.core.counts import big
from crashcheck.crashsim.states import DEFAULT_LIMIT, STRATEGIES, StateCodec, explored_count, select
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.cli import options
from crashcheck.harness.core.errors import UsageError

# Above this many explored states at one crash point, images are not fingerprinted (the count of
# cache hits would take too long) and `cached` is reported as unknown.
SCAN_LIMIT = 1_000_000


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("states", help="list crash points and the crash states a strategy explores",
                       description="For each crash point of TRACE (before every fence, at every "
                                   "operation boundary, at the end): the operation in flight, the "
                                   "pending cache lines, the exact number of legal crash states and "
                                   "the number the strategy explores.")
    p.add_argument("trace", help="trace file written by a program built with crashcheck-cc")
    p.add_argument("--model", choices=["adr", "eadr"], default="adr",
                   help="persistency model (default adr: x86 with volatile caches)")
    p.add_argument("--strategy", choices=STRATEGIES, default="bounded",
                   help="which states to explore (default bounded)")
    p.add_argument("--limit", type=options.positive, default=DEFAULT_LIMIT,
                   help=f"per crash point: bounded's states, lazy's executions (default {DEFAULT_LIMIT})")
    p.add_argument("--seed", type=options.seed, default=0,
                   help="bounded (and a partial lazy point's extra sample): seed of the random selection")
    p.add_argument("--clflush-guarantees", action="store_true",
                   help="adr: a clflush guarantees its line without a fence")
    p.add_argument("--line-size", type=options.positive, default=None,
                   help="cache-line size in bytes (default: the trace's)")
    p.add_argument("--atomic-unit", type=options.positive, default=8,
                   help="failure-atomic unit in bytes (default 8)")
    p.add_argument("--structure", help="lazy: the structure whose driver recovers the states")
    p.add_argument("--driver", help="lazy: a driver program to recover the states with (instead of --structure)")
    p.add_argument("--followup", default="", help="lazy: operations run after recovery, one per line")
    p.add_argument("--list", action="store_true", help="also print each state as the pending pieces it keeps")
    p.add_argument("--json", action="store_true", help="one JSON object per crash point")
    p.set_defaults(func=run)


def _piece_json(p: Piece) -> dict:
    return {"event": p.seq, "part": p.part, "tid": p.tid, "nt": p.nt, "region": p.region,
            "off": p.off, "size": len(p.data), "data": p.data.hex()}


def _line_offsets(cp: CrashPoint, base: int) -> list[int]:
    return [line - base for line in cp.pending_lines]


def _dumps(obj: dict) -> str:
    """JSON keeps exact counts, however many digits they have."""
    try:
        return json.dumps(obj)
    except ValueError:
        sys.set_int_max_str_digits(0)
        return json.dumps(obj)


def _lazy(args: argparse.Namespace, trace, options: ModelOptions) -> int:
    """`states --strategy lazy`: run the search and print its executions per crash point."""
    from crashcheck.crashsim.explore import explore
    from crashcheck.crashsim.runner_client import Runner, RunnerError
    from crashcheck.crashsim.trace import TraceError
    from crashcheck.harness.target import structures
    from crashcheck.harness.check.session import clean_env
    if args.driver:
        driver = args.driver
    elif args.structure:
        driver = str(structures.get(args.structure).driver(None))
    else:
        raise UsageError("--strategy lazy runs recovery: name the structure (--structure) or its driver (--driver)")
    if not trace.regions:
        raise UsageError(f"{args.trace}: the trace registered no PM region, nothing to recover")
    region = trace.regions[0]
    env = dict(clean_env(), CRASHCHECK_POOL_ADDR=f"{region.base:#x}")
    points: dict[int, list] = {}
    out = sys.stdout
    try:
        with Runner([driver, "serve", "--size", str(region.size)], env=env, pool_base=region.base,
                    pool_size=region.size) as runner:
            for o in explore(trace, options=options, strategy="lazy", runner=runner, limit=args.limit,
                             seed=args.seed, followup=args.followup.replace("\\n", "\n")):
                # an outcome answered without a run (an image or a whole search seen at an
                # earlier point, or what an earlier check read: `remembered`) ran nothing: it is
                # counted apart, not as an execution
                entry = points.setdefault(o.point.index, [o.point, 0, 0, 0])
                entry[1 if o.cached_from is None else 3] += 1
                entry[2] += o.covers
    except (RunnerError, TraceError, OSError) as exc:
        raise UsageError(f"cannot explore {args.trace} lazily with {driver}: {exc}") from None
    if not args.json:
        out.write(f"{args.trace}: {len(trace.events)} events, model {args.model}, strategy lazy\n")
        out.write(f"{'event':>9} {'kind':<9} {'op':>5} {'lines':>6} {'pieces':>7} {'legal':>12} "
                  f"{'executions':>10} {'cached':>7} {'complete':>8}\n")
    total = {"points": 0, "legal": 0, "executions": 0, "cached": 0, "complete": 0}
    for cp, execs, covered, cached in points.values():
        complete = covered == cp.legal
        total["points"] += 1
        total["legal"] += cp.legal
        total["executions"] += execs
        total["cached"] += cached
        total["complete"] += complete
        if args.json:
            out.write(_dumps({"index": cp.index, "event": cp.event, "kind": cp.kind, "op": cp.op,
                              "legal": cp.legal, "executions": execs, "cached": cached,
                              "covered": covered, "complete": complete}) + "\n")
        else:
            op = "-" if cp.op is None else str(cp.op)
            out.write(f"{cp.event:>9} {cp.kind:<9} {op:>5} {len(cp.pending_lines):>6} {cp.pending_pieces:>7} "
                      f"{big(cp.legal):>12} {execs:>10} {cached:>7} {'yes' if complete else 'partial':>8}\n")
    if not args.json:
        out.write(f"total: {total['points']} crash points, {big(total['legal'])} legal states, "
                  f"{total['executions']} executions ({total['cached']} more answered from the cache), "
                  f"{total['complete']} of {total['points']} crash points covered completely\n")
    return 0


def run(args: argparse.Namespace) -> int:
    trace = read_trace(args.trace)
    if not trace.complete:
        print(f"crashcheck: warning: {args.trace}: trace cut: {trace.cut_reason}", file=sys.stderr)
    options = ModelOptions(model=args.model, clflush_guarantees=args.clflush_guarantees,
                           line_size=args.line_size, atomic_unit=args.atomic_unit)
    try:
        sim = Simulator.from_trace(trace, options)
    except ModelError as exc:
        raise UsageError(str(exc)) from None
    if args.strategy == "lazy":
        return _lazy(args, trace, options)
    base = trace.regions[0].base if trace.regions else trace.pool_base
    out = sys.stdout
    if not args.json:
        strategy = args.strategy + (f" (limit {args.limit}, seed {args.seed})" if args.strategy == "bounded" else "")
        out.write(f"{args.trace}: {len(trace.events)} events, model {args.model}, strategy {strategy}\n")
        out.write(f"{'event':>9} {'kind':<9} {'op':>5} {'lines':>6} {'pieces':>7} {'legal':>12} "
                  f"{'explored':>9} {'cached':>7}  pending lines\n")
    seen: set[int] = set()
    totals = {"points": 0, "legal": 0, "explored": 0, "cached": 0}
    unknown_cached = False
    for cp in sim.crash_points():
        explored = explored_count(cp, args.strategy, args.limit, args.seed)
        cached: int | None = 0
        listed: list[list[Piece]] = []
        if explored <= SCAN_LIMIT or args.list:
            codec = StateCodec(cp, sim.image)
            for choice in select(cp, args.strategy, args.limit, args.seed):
                fp, _ = codec.encode(choice)
                if fp in seen:
                    cached += 1
                else:
                    seen.add(fp)
                if args.list:
                    listed.append(cp.kept(choice))
        else:
            cached = None
            unknown_cached = True
        totals["points"] += 1
        totals["legal"] += cp.legal
        totals["explored"] += explored
        totals["cached"] += cached or 0
        lines = _line_offsets(cp, base)
        if args.json:
            obj = {"index": cp.index, "event": cp.event, "kind": cp.kind, "op": cp.op,
                   "in_flight": list(cp.in_flight), "last_done": cp.last_done,
                   "pending_lines": lines, "pending_pieces": cp.pending_pieces,
                   "legal": cp.legal, "explored": explored, "cached": cached}
            if args.list:
                obj["states"] = [[_piece_json(p) for p in kept] for kept in listed]
            out.write(_dumps(obj) + "\n")
            continue
        op = "-" if cp.op is None else str(cp.op)
        shown = " ".join(f"+{x:#x}" for x in lines[:6]) + (f" ... ({len(lines)})" if len(lines) > 6 else "")
        out.write(f"{cp.event:>9} {cp.kind:<9} {op:>5} {len(lines):>6} {cp.pending_pieces:>7} "
                  f"{big(cp.legal):>12} {explored:>9} {'?' if cached is None else cached:>7}  {shown}\n")
        for n, kept in enumerate(listed):
            what = " ".join(p.describe() for p in kept) if kept else "nothing (only the guaranteed state)"
            out.write(f"{'':>11}state {n}: keeps {what}\n")
    if not args.json:
        cached_text = f"{totals['cached']}{'+?' if unknown_cached else ''}"
        out.write(f"total: {totals['points']} crash points, {big(totals['legal'])} legal states, "
                  f"{totals['explored']} explored, {cached_text} repeat an earlier image\n")
        if sim.unplaced:
            out.write(f"note: {sim.unplaced} stores fell outside every registered PM region and were ignored\n")
    return 0
