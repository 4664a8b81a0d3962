"""`crashcheck check STRUCTURE --history FILE`: crash-check one history the user wrote.

Owns the command line of checking a given history (a regression test for a fixed bug, a scenario
from a paper): the history is read (harness/check/user_history.py: a file, or the operations
themselves, `--history 'insert 1 2; delete 1'`, in the notation records print) and run as a fuzz
run of exactly one example that draws nothing (harness/run/config.py Config.history), so every
crash state, the continuation, the oracle, the crash-state shrinking, the fix search, the
records, the results file, the report, the summary and the exit status are fuzz's own
(harness/cli/cmd_fuzz.py execute): 0 when nothing unexpected was found, 1 when bugs were found, 2
on bad input. The history itself is never shrunk: it is what the user asked about.
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time

from crashcheck.harness.check import user_history
from crashcheck.harness.cli import cmd_fuzz
from crashcheck.harness.core import defaults
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.run.config import one_history
from crashcheck.harness.target import structures


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="crash-check one history you wrote (a file, or 'insert 1 2; delete 1')")
    p.add_argument("structure", metavar="STRUCTURE", help="the structure (see `crashcheck list`)")
    p.add_argument("--history", required=True, metavar="FILE|OPS",
                   help="a file of operations, one a line, as records print them (`insert 1 2`, `delete 1`, "
                        "`# comments`), or the operations themselves separated by `;`")
    p.add_argument("--load", type=int, default=0, metavar="N",
                   help="the first N operations are set-up: run and traced, never crash-checked (as a "
                        "record's `load`; default 0)")
    p.add_argument("--bug", help="check this seeded-bug variant of the structure")
    cmd_fuzz.add_options(p, drawn=False)
    # what fuzz draws histories with, fixed: one history, one worker, nothing to shrink but states
    p.set_defaults(func=run, budget=None, examples=1, jobs=1, dask=None, max_ops=None, keys=defaults.KEYS,
                   mix=defaults.MIX, threads=1, sched="mixed", shrink=defaults.SHRINK, stop_on=None)


def run(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    s = structures.get(args.structure)           # unknown: one line, exit 2
    if args.load < 0:
        raise UsageError(f"--load must be 0 or more operations, not {args.load}")
    args.structures = [args.structure]
    plan = cmd_fuzz.plan_of(args)            # the structure, --bug, --model, ... checked first
    ops = user_history.read_history(args.history, s, s.model(), args.load)
    plan = [(name, bug, settings, one_history(config, ops)) for name, bug, settings, config in plan]
    command = "crashcheck " + " ".join(shlex.quote(a) for a in sys.argv[1:]) if sys.argv[1:2] == ["check"] else ""
    return cmd_fuzz.execute(args, plan, command, t0)


__all__ = ["register", "run"]
