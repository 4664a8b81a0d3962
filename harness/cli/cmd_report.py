"""`crashcheck report RESULTS.json -o FILE.html`: render a results file as a self-contained page.

The results file is checked first (harness/triage/record_formats.py); the output must be a new or
regular file in an existing, writable folder, and never the results file itself."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.run.journal import is_journal, read_journal
from crashcheck.harness.core.user_files import same_file
from crashcheck.harness.render.report import write_report
from crashcheck.harness.triage.record_formats import check_results, load_results


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="render a results file (from fuzz --json) as HTML")
    p.add_argument("results", help="results JSON written by `crashcheck fuzz --json`, or the journal "
                   "(RESULTS.journal) a killed run left behind")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    p.set_defaults(func=run)


def check_output(output: str, source: str) -> None:
    """UsageError unless OUTPUT can be written without touching SOURCE."""
    out = Path(output)
    if os.path.lexists(out) and same_file(out, source):
        raise UsageError(f"{output} is the results file itself; write the report to another file "
                         "(e.g. -o report.html)")
    if out.is_dir():
        raise UsageError(f"{output} is a folder; give the report's file name (e.g. {out / 'report.html'})")
    folder = out.parent if str(out.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{output}: the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{output}: cannot write into the folder {folder} (permission denied)")


def run(args: argparse.Namespace) -> int:
    if is_journal(args.results):
        try:
            data = read_journal(Path(args.results))
        except (OSError, ValueError) as exc:
            raise UsageError(f"{args.results}: not a readable journal: {exc}") from None
        results = check_results(data, args.results)
    else:
        results = load_results(args.results)
    check_output(args.output, args.results)
    try:
        path = write_report(results, args.output)
    except OSError as exc:
        raise UsageError(f"{args.output}: cannot write the report: {exc.strerror or exc}") from None
    print(f"wrote {path}")
    return 0
