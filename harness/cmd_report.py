"""`crashcheck report RESULTS.json -o FILE.html`: render a results file as a self-contained page."""
from __future__ import annotations

import argparse
import json

from harness.errors import UsageError
from harness.report import write_report


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="render a results file (from fuzz --json) as HTML")
    p.add_argument("results", help="results JSON written by `crashcheck fuzz --json`")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        with open(args.results) as f:
            results = json.load(f)
    except FileNotFoundError:
        raise UsageError(f"{args.results}: no such results file") from None
    except json.JSONDecodeError as exc:
        raise UsageError(f"{args.results}: not a results file ({exc})") from None
    if not isinstance(results, dict) or "bugs" not in results or "stats" not in results:
        raise UsageError(f"{args.results}: not a crashcheck results file (no bugs/stats)")
    path = write_report(results, args.output)
    print(f"wrote {path}")
    return 0
