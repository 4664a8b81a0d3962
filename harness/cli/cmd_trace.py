"""`crashcheck trace show|stats|perf FILE`: print a trace, one event a line, its counts, or its
flushes and fences that did nothing (crashsim/perf.py).

Owns the human and JSON views of a trace; the format itself is crashsim/trace.py's.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict

from crashcheck.crashsim.trace import Event, Trace, read_trace
from crashcheck.harness.cli import options


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("trace", help="show a trace file or count its events")
    tsub = parser.add_subparsers(dest="trace_command", metavar="ACTION")
    tsub.required = True
    show = tsub.add_parser("show", help="print every event, one a line")
    show.add_argument("file", help="trace file written by a program built with crashcheck-cc")
    show.add_argument("--json", action="store_true", help="one JSON object per event")
    show.set_defaults(func=run_show)
    stats = tsub.add_parser("stats", help="counts per kind, per operation and per site")
    stats.add_argument("file")
    stats.add_argument("--top", type=options.positive, default=20, help="sites to list (default 20)")
    stats.add_argument("--json", action="store_true", help="one JSON object")
    stats.set_defaults(func=run_stats)
    perf = tsub.add_parser("perf", help="flushes and fences that made nothing durable, per site "
                                        "(never a bug: a cost on the hot path)")
    perf.add_argument("file")
    perf.add_argument("--top", type=options.positive, default=20, help="sites to list (default 20)")
    perf.add_argument("--json", action="store_true", help="one JSON object")
    perf.set_defaults(func=run_perf)
    imp = tsub.add_parser("import", help="turn a pmemcheck store log into a trace (docs/pmemcheck.md)")
    imp.add_argument("log", help="log of valgrind --tool=pmemcheck --log-stores=yes --log-file=LOG")
    imp.add_argument("-o", "--output", required=True, metavar="TRACE", help="trace file to write")
    imp.add_argument("--image", action="append", default=[], metavar="FILE",
                     help="initial content of the next region (the pool file before the run); "
                          "default: all zero")
    imp.add_argument("--region", action="append", default=[], metavar="ADDR:SIZE",
                     help="a PM mapping the log does not name (registered without a file)")
    imp.set_defaults(func=run_import)
    exp = tsub.add_parser("export", help="write a trace as a pmemcheck store log (for pmreorder)")
    exp.add_argument("file", help="trace file")
    exp.add_argument("--format", choices=["pmemcheck"], default="pmemcheck", help="log format")
    exp.add_argument("-o", "--output", required=True, metavar="LOG", help="log file to write")
    exp.add_argument("--markers", choices=["pmreorder", "plain"], default="pmreorder",
                     help="operation markers as op.N.BEGIN/op.N.END (pmreorder, default) or "
                          "op_begin N/op_end N")
    exp.add_argument("--file-name", action="append", default=[], metavar="PATH",
                     help="path written in the next region's REGISTER_FILE (default: its image)")
    exp.set_defaults(func=run_export)


def _load(path: str) -> Trace:
    trace = read_trace(path)
    if not trace.complete:
        print(f"crashcheck: warning: {path}: trace cut: {trace.cut_reason}", file=sys.stderr)
    return trace


def event_json(trace: Trace, ev: Event) -> dict:
    """The JSON view of one event (documented in docs/trace-format.md's reader section)."""
    site = trace.site(ev.site)
    obj = {"seq": ev.seq, "tid": ev.tid, "kind": ev.kind, "sub": ev.sub}
    if ev.kind in ("op_begin", "op_end"):
        obj["op"] = ev.addr
    else:
        obj["addr"] = ev.addr
        obj["off"] = ev.off
        obj["region"] = ev.region
        obj["size"] = ev.size
    if ev.kind in ("store", "ntstore"):
        obj["data"] = ev.data.hex()
    elif ev.kind == "mark":
        obj["label"] = ev.data.decode("utf-8", "replace")
    obj.update(site.as_dict() if site else {"file": "", "line": 0, "column": 0, "func": ""})
    return obj


def event_text(trace: Trace, ev: Event) -> str:
    site = trace.site(ev.site)
    where = site.describe() if site else "?"
    kind = f"{ev.kind}.{ev.sub}" if ev.sub else ev.kind
    if ev.kind in ("op_begin", "op_end"):
        what = f"op {ev.addr}"
    elif ev.kind == "fence":
        what = ""
    elif ev.kind == "mark":
        what = repr(ev.data.decode("utf-8", "replace"))
    else:
        # an offset in the pool, or in a region past it (r1+0x10), or an address outside them
        place = (f"{f'r{ev.region}' if ev.region else ''}+{ev.off:#x}" if ev.off is not None
                 else f"{ev.addr:#x}")
        what = f"{place} size {ev.size}"
        if ev.kind in ("store", "ntstore"):
            hexdata = ev.data[:32].hex()
            what += f" = {hexdata}{'...' if ev.size > 32 else ''}"
    return f"{ev.seq:>8} t{ev.tid:<3} {kind:<18} {what:<48} {where}"


def run_show(args: argparse.Namespace) -> int:
    trace = _load(args.file)
    out = sys.stdout
    if args.json:
        for ev in trace.events:
            out.write(json.dumps(event_json(trace, ev)) + "\n")
    else:
        out.write(f"# trace {trace.path}: version {trace.version}, pool {trace.pool_base:#x} "
                  f"size {trace.pool_size}, line {trace.line_size}, pid {trace.pid}, "
                  f"{len(trace.events)} events, {len(trace.sites)} sites\n")
        for ev in trace.events:
            out.write(event_text(trace, ev) + "\n")
    return 0


def compute_stats(trace: Trace) -> dict:
    """Counts per kind (and flavour), per operation, and per site."""
    per_kind: Counter[str] = Counter()
    per_op: dict[int, Counter[str]] = defaultdict(Counter)
    per_site: dict[int, Counter[str]] = defaultdict(Counter)
    current: int | None = None
    for ev in trace.events:
        per_kind[f"{ev.kind}.{ev.sub}" if ev.sub else ev.kind] += 1
        if ev.kind == "op_begin":
            current = ev.addr
            continue
        if ev.kind == "op_end":
            current = None
            continue
        if current is not None:
            per_op[current][ev.kind] += 1
        per_site[ev.site][ev.kind] += 1
    sites = []
    for sid, counts in sorted(per_site.items(), key=lambda kv: -sum(kv[1].values())):
        site = trace.site(sid)
        sites.append({"site": sid, "where": site.describe() if site else "?",
                      "total": sum(counts.values()), "kinds": dict(counts)})
    return {"events": len(trace.events), "complete": trace.complete,
            "kinds": dict(sorted(per_kind.items())),
            "ops": {str(op): dict(c) for op, c in sorted(per_op.items())},
            "sites": sites}


def run_stats(args: argparse.Namespace) -> int:
    trace = _load(args.file)
    stats = compute_stats(trace)
    if args.json:
        print(json.dumps(stats))
        return 0
    print(f"{stats['events']} events{'' if trace.complete else ' (trace cut)'}")
    print("\nper kind:")
    for kind, n in stats["kinds"].items():
        print(f"  {kind:<20} {n:>10}")
    ops = stats["ops"]
    if ops:
        cols = ["store", "ntstore", "flush", "fence", "alloc", "free"]
        print(f"\nper operation ({len(ops)}):")
        print("  " + f"{'op':>8} " + " ".join(f"{c:>8}" for c in cols))
        for op, counts in ops.items():
            print("  " + f"{op:>8} " + " ".join(f"{counts.get(c, 0):>8}" for c in cols))
    print(f"\nper site (top {min(args.top, len(stats['sites']))} of {len(stats['sites'])}):")
    for row in stats["sites"][:args.top]:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(row["kinds"].items()))
        print(f"  {row['total']:>8}  {row['where']}  [{kinds}]")
    return 0


def run_perf(args: argparse.Namespace) -> int:
    from crashcheck.crashsim.perf import useless_persistence
    trace = _load(args.file)
    rows, totals = useless_persistence(trace)
    if args.json:
        print(json.dumps({"totals": totals, "sites": [r.as_json(trace) for r in rows]}))
        return 0
    print(f"{totals['flushes']} flushes, {totals['fences']} persistence fences; did nothing: "
          f"{totals['flush-clean-line']} flushes of a clean line, {totals['flush-repeated']} repeated "
          f"flushes, {totals['fence-idle']} fences with nothing to order")
    for r in rows[:args.top]:
        site = trace.site(r.site)
        print(f"  {r.count:>8}  {r.kind:<17} {r.sub:<10} {site.describe() if site else '?'}")
    if len(rows) > args.top:
        print(f"  ... {len(rows) - args.top} more sites (--top)")
    return 0


def run_import(args: argparse.Namespace) -> int:
    from crashcheck.crashsim.pmemcheck_import import import_log, parse_region, summary
    regions = [parse_region(text) for text in args.region]
    result = import_log(args.log, args.output, images=args.image, regions=regions)
    print("\n".join(summary(result, args.log)))
    return 0


def run_export(args: argparse.Namespace) -> int:
    from crashcheck.crashsim.pmemcheck_export import export_log
    trace = _load(args.file)
    notes = export_log(trace, args.output, markers=args.markers, file_names=args.file_name)
    print(f"{args.file} -> {args.output}: pmemcheck store log")
    for note in notes:
        print(f"  {note}")
    return 0
