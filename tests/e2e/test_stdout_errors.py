"""A full or closed standard output is one error line and exit 2 for every subcommand that
prints, never a traceback and never exit 0 for an answer that was not delivered; a reader that
went away (`| head`) ends quietly with 0."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cli_run import ROOT

# enough events that `trace show` prints more than a pipe holds (64 KiB): the reader that goes
# away must really break the pipe
HISTORY = "".join(f"insert {k} {k}\n" for k in range(1, 400)) + "delete 1\nlookup 2\n"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> str:
    work = tmp_path_factory.mktemp("stdout")
    (work / "history").write_text(HISTORY)
    out = work / "wort.trace"
    subprocess.run([str(ROOT / "build/trees/wort/driver"), "run", "--pool", str(work / "pool"),
                    "--create", "--size", "8m", str(work / "history")],
                   env={"CRASHCHECK_TRACE": str(out)}, check=True, capture_output=True, timeout=60)
    return str(out)


COMMANDS = [("trace", "show", "{t}"), ("trace", "stats", "{t}"), ("states", "{t}"), ("list",),
            ("list", "--json"), ("--help",), ("trace", "--help")]


def run(argv: list[str], stdout) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *argv], cwd=ROOT, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120)


@pytest.mark.parametrize("cmd", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("where", ["full", "closed"])
def test_unwritable_stdout_is_one_line(cmd, where, trace):
    argv = [a.format(t=trace) for a in cmd]
    if where == "full":
        with open("/dev/full", "w") as full:
            res = run(argv, full)
        want = "crashcheck: error: cannot write to standard output: No space left on device"
    else:
        res = subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *argv], cwd=ROOT,
                             stdin=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             timeout=120, pass_fds=(), stdout=subprocess.DEVNULL,
                             preexec_fn=lambda: __import__("os").close(1))
        want = "crashcheck: error: cannot write to standard output: it is closed"
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [want]


def test_reader_that_went_away(trace):
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", "trace", "show", trace], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout.readline().startswith("# trace ")
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == ""
