"""`crashcheck replay BUG.json`: rerun one bug record and print it.

Owns replaying: the record's history is traced again with the same driver, the crash point and
crash state it names are checked again, and the oracle judges the result. Exit status 1 when the
bug reproduces (as `fuzz` exits 1 on bugs), 0 when it no longer does (fixed), 2 on bad input.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from harness import structures
from harness.errors import UsageError
from harness.pipeline import Checker, RunFailure, Settings, history_text, oracle_point, result_dict
from harness.report import site_text
from harness.strategies import with_load
from specs import leaks as leak_policy
from specs.ordered_map import parse_op, prefix_states
from specs.oracle import judge_recovery


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("replay", help="rerun one bug record (from fuzz) and print it")
    p.add_argument("record", help="a bug record (RESULTS.bugs/<id>.json) or a results file with --id")
    p.add_argument("--id", help="which bug of a results file")
    p.set_defaults(func=run)


def load_record(path: str, ident: str | None) -> dict:
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such bug record") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not a bug record ({exc})") from None
    if isinstance(data, dict) and "bugs" in data:
        if ident is None:
            if len(data["bugs"]) != 1:
                raise UsageError(f"{path} is a results file with {len(data['bugs'])} bugs; choose one with --id")
            return data["bugs"][0]
        for b in data["bugs"]:
            if b["id"] == ident:
                return b
        raise UsageError(f"{path}: no bug {ident!r}")
    if not isinstance(data, dict) or "history" not in data or "crash" not in data:
        raise UsageError(f"{path}: not a bug record (no history/crash)")
    return data


def run(args: argparse.Namespace) -> int:
    rec = load_record(args.record, args.id)
    s = structures.get(rec["structure"])
    settings = Settings(model=rec["model"], strategy=rec.get("strategy", "bounded"),
                        limit=rec.get("limit", 64), seed=rec.get("seed", 0))
    try:
        ops = with_load([parse_op(line) for line in rec["history"]], int(rec.get("load", 0)))
        follow = [parse_op(line) for line in rec.get("followup", [])]
    except (ValueError, IndexError) as exc:
        raise UsageError(f"{args.record}: bad history line ({exc})") from None
    print(f"replaying {rec['id']}: {rec['class']} in {rec['structure']}"
          f"{' (seeded bug ' + rec['bug'] + ')' if rec.get('bug') else ''}, model {rec['model']}")
    print("history:")
    for i, line in enumerate(rec["history"]):
        print(f"  {i:>3}  {line}")
    crash = rec["crash"]
    with Checker(s, rec.get("bug"), settings) as checker:
        try:
            trace, lines = checker.trace(ops)
        except RunFailure as exc:
            # the structure died or hung in the crash-free run (operation-crash, -hang)
            f = exc.finding
            same = f.cls == rec["class"]
            print(f"{'reproduced' if same else 'a different bug now'} without any crash: {f.cls}: {f.detail}")
            return 1
        if crash.get("index") is None:
            # found by the crash-free run: run it again and see whether it still fails
            found = checker.crash_free_findings(ops, lines)
            if found and found[0].cls == rec["class"]:
                print(f"reproduced without any crash: {found[0].cls}: {found[0].detail}")
                return 1
            if found:
                print(f"a different bug now, without any crash: {found[0].cls}: {found[0].detail}")
                return 1
            print("not reproduced: the crash-free run now agrees with the model and keeps the invariants")
            return 0
        history_point = None
        if rec.get("recovery_of"):
            # a crash inside recovery: rebuild the original post-crash image, trace its recovery
            orig = rec["recovery_of"]
            ocp, image = checker.image_at(trace, orig["index"], tuple(orig["choice"]))
            history_point = oracle_point(ocp, len(ops))
            trace = checker.trace_recovery(image)
            print(f"recovery of the crash state at event #{ocp.event} was itself interrupted")
        cp = checker.point_at(trace, crash["index"])
        choice = tuple(crash["choice"])
        if len(choice) != len(cp.units):
            print("the trace changed since the record was made (crash point has other pending stores); "
                  "the bug does not replay as recorded")
            return 0
        [res] = checker.recheck(trace, cp.index, [choice], history_text(follow))
    point = history_point or oracle_point(cp, len(ops))
    site = trace.site(trace.events[cp.event].site) if cp.event < len(trace.events) else None
    print(f"crash: before event #{cp.event}" + (f" at {site.describe()}" if site else "")
          + (f", during operation {point.inflight}" if point.inflight is not None else ""))
    for p in cp.lost(choice):
        s_ = trace.site(trace.events[p.seq].site)
        print(f"  lost   #{p.seq} +{p.off:#x} {len(p.data)} bytes {p.data.hex()}  {s_.describe() if s_ else '?'}")
    verdict = judge_recovery(ops, point, result_dict(res), follow, prefix_states(ops))
    if rec["class"] == "leak":
        objs = leak_policy.unreachable(res.result)
        if objs:
            attributed = leak_policy.attribute(trace, objs, cp.event)
            print(f"reproduced: leak: {leak_policy.describe(attributed)}")
            for o in attributed:
                print(f"  leaked +{o['off']:#x} {o['size']} bytes, allocated at {site_text(o.get('site'))}")
            return 1
        print("not reproduced: nothing leaks in this crash state any more")
        return 0
    if not verdict.ok and verdict.cls == rec["class"]:
        print(f"reproduced: {verdict.cls}: {verdict.detail}")
        return 1
    if not verdict.ok:
        print(f"a different bug now: {verdict.cls}: {verdict.detail}")
        return 1
    print("not reproduced: recovery now leaves an acceptable state")
    return 0
