"""`crashcheck list [--json]`: the structures crashcheck can fuzz, their models and seeded bugs."""
from __future__ import annotations

import argparse
import json

from harness import structures


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("list", help="structures, their persistency models and seeded bugs")
    p.add_argument("--json", action="store_true", help="a JSON list of {name, models, bugs}")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    rows = []
    for name in structures.all_names():
        s = structures.get(name)
        rows.append({"name": name, "builtin": s.builtin, "models": list(s.models),
                     "bugs": [{"name": b.name, "class": b.cls, "description": b.description} for b in s.bugs],
                     "known": s.known})
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        kind = "built-in" if row["builtin"] else "user"
        print(f"{row['name']}  ({kind}; models: {', '.join(row['models'])}; {len(row['bugs'])} seeded bugs)")
        for b in row["bugs"]:
            print(f"    --bug {b['name']:<28} {b['class']:<26} {b['description']}")
        for k in row["known"]:
            print(f"    known by design: {k.get('class')} from {k.get('alloc_func', '?')}: {k.get('reason', '')}")
    return 0
