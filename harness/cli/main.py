"""The `crashcheck` command: parses arguments and dispatches to one module per subcommand.

Each subcommand module (harness/cmd_*.py) exposes `register(subparsers)`, which adds its parser
and sets `func` to a callable taking the parsed arguments and returning an exit code. Errors the
user can fix are raised as a CrashcheckError (crashsim/errors.py maps the hierarchy) and end here
with one line and exit 2, as does a child process that outlived its time limit.
"""
from __future__ import annotations

import argparse
import importlib
import subprocess
import sys

from crashcheck.harness.core import budget as _budget  # noqa: F401 - first, so PROCESS_START is the start-up time
from crashcheck.crashsim.errors import CrashcheckError
from crashcheck.harness.cli import stdout_guard
from crashcheck.harness.core import collector, strays

# Subcommand modules, in the order `crashcheck --help` lists them.
COMMAND_MODULES = ["crashcheck.harness.cli.cmd_list", "crashcheck.harness.cli.cmd_fuzz", "crashcheck.harness.cli.cmd_check", "crashcheck.harness.cli.cmd_campaign", "crashcheck.harness.cli.cmd_run", "crashcheck.harness.cli.cmd_replay", "crashcheck.harness.cli.cmd_report",
                   "crashcheck.harness.cli.cmd_build", "crashcheck.harness.cli.cmd_init", "crashcheck.harness.cli.cmd_trace", "crashcheck.harness.cli.cmd_stats",
                   "crashcheck.harness.cli.cmd_states", "crashcheck.harness.cli.cmd_doctor"]


def one_line(text: str) -> str:
    """TEXT as one printable line: a file name or a value from a hostile input may hold newlines
    or terminal escapes, and the error must stay the one line the user reads."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is the one `crashcheck: error:` line of every other bad input
    (argparse would print the whole usage first), naming the subcommand and where its help is."""

    def error(self, message: str):
        where = self.prog.removeprefix("crashcheck").strip()
        print(f"crashcheck: error: {where + ': ' if where else ''}{one_line(message)} "
              f"(see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(2)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every subcommand, or of COMMAND alone when it names one: a subcommand's
    module imports what it runs (fuzz's imports alone take about a second), so a command line
    naming one loads only that."""
    parser = Parser(prog="crashcheck",
                    description="Crash-consistency testing for persistent-memory structures.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    only = f"crashcheck.harness.cli.cmd_{command}"
    for name in [only] if only in COMMAND_MODULES else COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


# Options whose value may itself start with "-" (`--cflags -DFOO`): argparse would take the value
# for an option of its own, so `--cflags X` is read as `--cflags=X`.
DASH_VALUE_OPTIONS = ("--cflags", "--ldflags", "--common-cflags")


def join_dash_values(argv: list[str]) -> list[str]:
    """ARGV with every `OPTION VALUE` of DASH_VALUE_OPTIONS written as `OPTION=VALUE`."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] in DASH_VALUE_OPTIONS and i + 1 < len(argv):
            out.append(f"{argv[i]}={argv[i + 1]}")
            i += 2
        else:
            out.append(argv[i])
            i += 1
    return out


def main(argv: list[str] | None = None) -> int:
    real_stdout = sys.stdout
    stdout_guard.install()
    collector.tune()                   # fewer young collections while states are explored
    try:
        with strays.collected():       # a daemon the code under test started dies with the command
            return _run(argv)
    finally:
        sys.stdout = real_stdout


def _run(argv: list[str] | None) -> int:
    try:
        words = join_dash_values(sys.argv[1:] if argv is None else list(argv))
        parser = build_parser(words[0]) if words else build_parser()
        try:
            args = parser.parse_args(words)
        except SystemExit:
            sys.stdout.flush()   # --help's text, written before argparse exits
            raise
        status = int(args.func(args) or 0)
        sys.stdout.flush()       # a full stdout may only fail here: it must not pass as exit 0
        return status
    except stdout_guard.OutputError as exc:
        stdout_guard.silence()
        print(f"crashcheck: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except CrashcheckError as exc:
        print(f"crashcheck: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except subprocess.TimeoutExpired as exc:
        cmd = exc.cmd if isinstance(exc.cmd, str) else " ".join(map(str, exc.cmd or ["?"]))
        print(f"crashcheck: error: `{one_line(cmd)[:200]}` did not finish within {exc.timeout:g} s",
              file=sys.stderr)
        return 2
    except BrokenPipeError:
        stdout_guard.silence()
        return 0
    except KeyboardInterrupt:
        print("crashcheck: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
