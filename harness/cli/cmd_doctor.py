"""`crashcheck doctor [--json]`: what this machine gives crashcheck, and how to get what is missing.

One line per part (harness/target/environment.py probes them): found, or missing with what that
costs and how to get it. Exits 1 when a part crashcheck cannot check anything without is
missing, else 0 (a missing optional part, such as pmemcheck or Dask, only turns off what needs it).
"""
from __future__ import annotations

import argparse
import json

from crashcheck.harness.target.environment import probe_all


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="which LLVM, libpmem, pmemcheck, Dask and kernel features crashcheck "
                                      "finds here, and how to get what is missing")
    p.add_argument("--json", action="store_true",
                   help="a JSON list of {name, ok, detail, fix, required}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    probes = probe_all()
    broken = [p for p in probes if p.required and not p.ok]
    if args.json:
        print(json.dumps([p.as_json() for p in probes], indent=2))
        return 1 if broken else 0
    width = max(len(p.name) for p in probes)
    for p in probes:
        mark = "ok" if p.ok else ("MISSING" if p.required else "missing")
        line = f"{mark:<8} {p.name:<{width}}  {p.detail}"
        if not p.ok and p.fix:
            line += f"; to get it: {p.fix}"
        print(line)
    if broken:
        print(f"crashcheck cannot check anything until these are fixed: {', '.join(p.name for p in broken)}")
        return 1
    missing = [p.name for p in probes if not p.ok]
    print("crashcheck is ready" + (f" (without: {', '.join(missing)})" if missing else ""))
    return 0
