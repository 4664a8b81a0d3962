"""One exception hierarchy (crashsim/errors.py), mapped to one line and exit 2 at the CLI.

Before the hierarchy, RunnerError, DriverFailure and subprocess.TimeoutExpired escaped `crashcheck`
as Python tracebacks: a subcommand raising any of them must end in exactly one
`crashcheck: error:` line on stderr and exit status 2."""
import argparse
import subprocess

import pytest

from crashcheck.crashsim.errors import CrashcheckError
from crashcheck.crashsim.persistency import ModelError
from crashcheck.crashsim.runner_client import RunnerError
from crashcheck.crashsim.trace import TraceError
from crashcheck.harness.cli import main as cli
from crashcheck.harness.core.errors import DriverFailure, SetupError, UsageError
from crashcheck.harness.check.findings import Finding
from crashcheck.harness.check.traced_run import RunFailure


def test_every_error_derives_from_the_root():
    for cls in (TraceError, RunnerError, ModelError, UsageError, SetupError, DriverFailure, RunFailure):
        assert issubclass(cls, CrashcheckError), cls
    # flow control is not an error
    from crashcheck.crashsim.runner_client import Stopped
    from crashcheck.harness.core.budget import OutOfTime
    assert not issubclass(Stopped, CrashcheckError) and not issubclass(OutOfTime, CrashcheckError)


def _raising(exc):
    def build_parser():
        p = argparse.ArgumentParser(prog="crashcheck")

        def func(args):
            raise exc
        p.set_defaults(func=func)
        return p
    return build_parser


@pytest.mark.parametrize("exc, words", [
    (RunnerError("runner made no progress for 120 s"), "runner made no progress"),
    (DriverFailure("the traced run of wort died (signal 11)"), "the traced run of wort died"),
    (RunFailure(Finding("operation-crash", "without any crash, `insert 1 2` died", ("x", "y")), None),
     "without any crash"),
    (subprocess.TimeoutExpired(["make", "-s", "trees"], 30), "`make -s trees` did not finish within 30 s"),
    (TraceError("t.trace: not a crashcheck trace"), "not a crashcheck trace"),
    (ModelError("--atomic-unit must divide the line size"), "atomic-unit"),
])
def test_cli_maps_errors_to_one_line_and_exit_2(monkeypatch, capsys, exc, words):
    monkeypatch.setattr(cli, "build_parser", _raising(exc))
    assert cli.main([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("crashcheck: error: ") and words in err, err
    assert "Traceback" not in err


def test_a_bug_in_crashcheck_itself_still_shows_its_traceback(monkeypatch):
    """Only crashcheck's own errors are one line: an internal error must not hide as one."""
    monkeypatch.setattr(cli, "build_parser", _raising(KeyError("oops")))
    with pytest.raises(KeyError):
        cli.main([])
