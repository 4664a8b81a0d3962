"""`crashcheck list [--json]`: the structures crashcheck can fuzz, their models and seeded bugs.

A structure whose catalog (meta.json, bugs.json, expect.json) cannot be read is listed with the
reason instead of ending the listing: the others stay usable. `list` still exits 0 (it did list
everything; the broken one is shown, and a warning goes to stderr); commands that use the broken
structure (`fuzz`, `replay`) end with that reason and exit 2.
"""
from __future__ import annotations

import argparse
import json
import sys

from crashcheck.harness.target import structures
from crashcheck.harness.core.errors import UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="structures, their persistency models and seeded bugs")
    p.add_argument("--json", action="store_true",
                   help="a JSON list of {name, builtin, model, models, bugs, many, known}; a broken one has {name, error}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rows = []
    for name in structures.all_names():
        try:
            s = structures.get(name)
        except UsageError as exc:
            rows.append({"name": name, "error": str(exc)})
            print(f"crashcheck: warning: {name} cannot be used: {exc}", file=sys.stderr)
            continue
        try:
            spec = s.spec_model
        except UsageError:
            spec = None          # not built yet: its driver says which model
        rows.append({"name": name, "builtin": s.builtin, "model": spec, "models": list(s.models),
                     "bugs": [{"name": b.name, "class": b.cls, "description": b.description, "threads": b.threads}
                              for b in s.bugs],
                     "many": [{"name": v.name, "bugs": list(v.parts), "description": v.description, "threads": v.threads}
                              for v in s.many],
                     "known": s.known})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        if "error" in row:
            print(f"{row['name']}  (broken: {row['error']})")
            continue
        kind = "built-in" if row["builtin"] else "user"
        spec = f"{row['model']} model" if row["model"] else "not built"
        print(f"{row['name']}  ({kind}; {spec}; persistency models: {', '.join(row['models'])}; "
              f"{len(row['bugs'])} seeded bugs)")
        for b in row["bugs"]:
            needs = f"(needs --threads {b['threads']}) " if b["threads"] > 1 else ""
            print(f"    --bug {b['name']:<28} {b['class']:<26} {needs}{b['description']}")
        for v in row["many"]:
            needs = f"(needs --threads {v['threads']}) " if v["threads"] > 1 else ""
            print(f"    --bug {v['name']:<28} {'many':<26} {needs}{len(v['bugs'])} seeded bugs at once: {', '.join(v['bugs'])}")
        for k in row["known"]:
            print(f"    known by design: {k['class']} from {k['alloc_func'] or '?'}: {k['reason']}")
    return 0
