"""`crashcheck campaign FILE.toml`: many fuzz runs on one executor, into one results file and one report.

Owns reading a campaign file: a list of runs, each a structure with the fuzz options that differ
(model, threads, bug, budget or examples, ...), and defaults for all of them at the top level:

    examples = 16                  # any run key here is every run's default
    seed = 3

    [[run]]
    structure = "wort"
    bug = "no-flush-link"

    [[run]]
    structure = "heart"
    model = "eadr"
    threads = 3
    budget = 60

Each run is checked exactly as `crashcheck fuzz` checks its command line (the run becomes that
command line, parsed by fuzz's own parser), so a mistake names the run and says what fuzz would
say. All runs go to the executor at once (`--jobs N` or `--dask ADDRESS`, as for fuzz), and their
results are written, summarised and exit like one fuzz run's (harness/cli/cmd_fuzz.py execute).
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from crashcheck.harness.cli import cmd_fuzz

from crashcheck.harness.core import defaults
from crashcheck.harness.core.errors import UsageError

try:
    import tomllib
except ModuleNotFoundError:        # Python 3.10
    tomllib = None

# Campaign keys -> fuzz options (a key named like its option, with _ for -).
RUN_KEYS = ("structure", "bug", "model", "threads", "budget", "examples", "seed", "strategy", "limit",
            "max_ops", "keys", "mix", "sched", "recovery_crashes", "atomic_unit")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("campaign", help="run the fuzz runs of a campaign file on one executor, into one report")
    p.add_argument("file", metavar="FILE.toml", help="the campaign: [[run]] tables (structure, model, threads, "
                                                     "bug, budget or examples, ...)")
    p.add_argument("--jobs", type=int, default=defaults.JOBS, help=f"parallel worker processes (default {defaults.JOBS})")
    p.add_argument("--dask", metavar="ADDRESS", help="run on Dask: tcp://HOST:8786 or local:N (as for fuzz)")
    p.add_argument("--json", dest="json_out", help="write the results file here")
    p.add_argument("--report", help="write the HTML report here")
    p.add_argument("--bugdir", help="where each bug record goes (default: RESULTS.bugs/ or crashcheck-bugs/)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.set_defaults(func=run)


class _Raising(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(message)


def _fuzz_parser() -> argparse.ArgumentParser:
    parser = _Raising(prog="crashcheck", add_help=False)
    cmd_fuzz.register(parser.add_subparsers(parser_class=_Raising))
    return parser


def _read(path: Path) -> list[dict]:
    if tomllib is None:
        raise UsageError("campaign files need Python 3.11 or later (tomllib)")
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise UsageError(f"cannot read the campaign file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"campaign file {path} is not TOML: {exc}") from None
    runs = data.pop("run", None)
    if not isinstance(runs, list) or not runs or not all(isinstance(r, dict) for r in runs):
        raise UsageError(f"campaign file {path} has no runs: give one [[run]] table per run")
    for where, table in [("the top level", data)] + [(f"run {i + 1}", r) for i, r in enumerate(runs)]:
        unknown = sorted(set(table) - set(RUN_KEYS))
        if unknown:
            raise UsageError(f"campaign file {path}, {where}: unknown key {unknown[0]!r} "
                             f"(keys: {', '.join(RUN_KEYS)})")
    # a run's own budget replaces a default number of examples, and the other way round
    return [{**{k: v for k, v in data.items() if not (k in ("budget", "examples") and r.keys() & {"budget", "examples"})},
             **r} for r in runs]


def _argv(run: dict) -> list[str]:
    argv = ["fuzz", str(run.get("structure", ""))]
    for key, value in run.items():
        if key != "structure":
            argv += [f"--{key.replace('_', '-')}", str(value)]
    return argv


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    path = Path(args.file)
    parser = _fuzz_parser()
    plan, rows = [], []
    for i, r in enumerate(_read(path)):
        if not isinstance(r.get("structure"), str) or not r["structure"]:
            raise UsageError(f"campaign file {path}, run {i + 1}: no structure (structure = \"NAME\")")
        try:
            ns = parser.parse_args(_argv(r))
            ns.jobs = args.jobs
            mine = cmd_fuzz.plan_of(ns)
        except UsageError as exc:
            raise UsageError(f"campaign file {path}, run {i + 1} ({r['structure']}): {exc}") from None
        plan += mine
        rows += [{"run": i + 1, "model": ns.model, "threads": ns.threads}] * len(mine)
    if args.dask is not None and args.jobs != defaults.JOBS:
        raise UsageError("--jobs and --dask both say where the work runs; give one")

    def shape(res: dict, results: list) -> None:
        """Each row says which run it is; a bug id seen in two runs (one structure under two
        models) gets its run's number, so no record overwrites another's."""
        res["campaign"] = str(path)
        ids: dict[str, int] = {}
        for b in res["bugs"]:
            ids[b["id"]] = ids.get(b["id"], 0) + 1
        for row, result in zip(res["per_structure"], results):
            row.update(rows[result.target])
            for b in result.records:
                if ids[b["id"]] > 1:
                    new = f"{b['id']}-run{row['run']}"
                    b["replay"] = b["replay"].replace(f"{b['id']}.json", f"{new}.json")
                    b["id"] = new
    command = "crashcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["campaign"] else ""
    return cmd_fuzz.execute(args, plan, command, t0, shape)
