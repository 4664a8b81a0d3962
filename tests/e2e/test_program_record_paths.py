"""A program-mode record names its program and commands so that `crashcheck replay` runs them again
from the folder the run was started in: a program or checker given by an absolute path inside that
folder becomes `./NAME`, never a bare `NAME` that replay would look up on PATH (found by the
self-fuzz, tests/selffuzz: every record of a program run from its own folder failed to replay)."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess

import pytest

from cli_run import ROOT
from crashcheck.harness.cli.main import main

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"

pytestmark = pytest.mark.usefixtures("instrument_built")


def _main(*args) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_a_record_of_commands_given_by_absolute_paths_in_the_run_folder_replays(tmp_path, monkeypatch):
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(ROOT / "examples" / "pmlog" / "pmlog.c", proj)
    subprocess.run([CC, "-O1", "-DPMLOG_BUG", proj / "pmlog.c", "-lpmem", "-o", proj / "pmlog"], check=True,
                   capture_output=True)
    monkeypatch.chdir(proj)
    exe = proj / "pmlog"
    code, out, err = _main("run", "--quiet", "--json", proj / "out.json", "--checker", f"{exe} check {{image}}",
                           "--recover", f"{exe} recover {{image}}", "--", exe, "append", "pool", "2")
    assert code == 0, out + err                  # recovery repairs what the bug leaves
    code, out, err = _main("run", "--quiet", "--json", proj / "out.json", "--checker", f"{exe} check {{image}}",
                           "--", exe, "append", "pool", "2")
    assert code == 1, out + err
    [bug] = json.loads((proj / "out.json").read_text())["bugs"]
    assert bug["program"]["checker"] == "./pmlog check {image}"
    assert bug["program"]["argv"][0] == "./pmlog"
    code, out, err = _main("replay", proj / "out.bugs" / f"{bug['id']}.json")
    assert code == 1, out + err
    assert "reproduced: checker-failure" in out
