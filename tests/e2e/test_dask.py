"""Scale-out on Dask: the same campaign on a Dask cluster finds what --jobs 1 finds, a
worker killed mid-run costs only its unit (run again), a worker with another build is refused,
and every user mistake about --dask is one error line.

Each test runs the real CLI in a subprocess. Runs are small (a few histories of a seeded bug) so
the file stays well under a minute on 2 cores; starting a LocalCluster costs a few seconds each.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_run import ROOT, run_cli

from crashcheck.harness.cli.main import main

pytest.importorskip("distributed")

# wort's no-flush-link with these options: one unexpected bug and two expected leaks, in groups
# that need merging across units (test_run_trust uses the same run for --jobs).
RUN = ("fuzz", "wort", "--bug", "no-flush-link", "--examples", "12", "--seed", "3", "--recovery-crashes",
       "1", "--max-ops", "5", "--limit", "8", "--quiet")
STATS = ("histories", "crash_points", "states_explored")


def _found(path: Path) -> tuple[list, dict]:
    data = json.loads(path.read_text())
    assert data["complete"], data.get("interrupted")
    bugs = sorted((b["class"], b["group"], b["expected"], b["occurrences"], b["id"], b["history"])
                  for b in data["bugs"])
    return bugs, {k: data["stats"][k] for k in STATS}


@pytest.fixture(scope="module")
def jobs1(tmp_path_factory):
    out = tmp_path_factory.mktemp("jobs1") / "r.json"
    res = run_cli(*RUN, "--jobs", "1", "--json", out)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    found = _found(out)
    assert sum(not b[2] for b in found[0]) >= 1 and len(found[0]) >= 2, found
    return found


def test_dask_local_finds_what_jobs_1_finds(jobs1, tmp_path):
    out = tmp_path / "d.json"
    res = run_cli(*RUN, "--dask", "local:2", "--json", out)
    assert res.returncode == 1 and "Traceback" not in res.stderr, res.stderr
    assert _found(out) == jobs1


def test_a_killed_worker_loses_only_its_unit(jobs1, tmp_path):
    # Each checker's work folder is crashcheck-<pid>-*: the pid of the Dask worker process running
    # a unit. Kill the first one seen; the scheduler runs its unit again, and the run ends with
    # every bug --jobs 1 finds, counted the same.
    work, out = tmp_path / "work", tmp_path / "k.json"
    work.mkdir()
    env = dict(os.environ, CRASHCHECK_WORKDIR=str(work))
    proc = subprocess.Popen([sys.executable, "-m", "crashcheck.harness.cli.main", *RUN, "--dask", "local:2", "--json", str(out)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = None
    deadline = time.monotonic() + 60
    while killed is None and time.monotonic() < deadline and proc.poll() is None:
        for d in work.glob("crashcheck-*-*"):
            pid = int(d.name.split("-")[1])
            if pid != proc.pid:
                os.kill(pid, signal.SIGKILL)
                killed = pid
                break
        time.sleep(0.05)
    stdout, stderr = proc.communicate(timeout=240)
    assert killed is not None, stderr
    assert proc.returncode == 1 and "Traceback" not in stderr, stderr
    assert _found(out) == jobs1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_worker_with_another_build_is_refused(tmp_path):
    # The worker's build folder is a copy of ours with wort's driver one byte longer.
    build = tmp_path / "build"
    shutil.copytree(ROOT / "build" / "crashsim", build / "crashsim", symlinks=True)
    shutil.copytree(ROOT / "build" / "trees" / "wort", build / "trees" / "wort", symlinks=True)
    with open(build / "trees" / "wort" / "driver", "ab") as f:
        f.write(b"\0")
    port = _free_port()
    bindir = Path(sys.executable).parent
    env = dict(os.environ, CRASHCHECK_BUILD=str(build))
    procs = [subprocess.Popen([bindir / "dask", "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
             subprocess.Popen([bindir / "dask", "worker", f"tcp://127.0.0.1:{port}", "--nthreads", "1",
                               "--no-dashboard"], env=env, cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        res = run_cli("fuzz", "wort", "--examples", "2", "--quiet", "--dask", f"tcp://127.0.0.1:{port}",
                      "--json", tmp_path / "r.json", timeout=120)
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2, res.stderr
    assert len(lines) == 1 and "has another build of wort" in lines[0], res.stderr
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("address, needle", [
    ("local:0", "give local:N with N from 1 to 64"),
    ("localhost", "give local:N"),
    ("bogus", "not a scheduler address"),
    ("tcp://127.0.0.1:1", "cannot reach the Dask scheduler at tcp://127.0.0.1:1"),
])
def test_dask_address_mistakes_are_one_line(address, needle, tmp_path, capsys, monkeypatch):
    # in this process: each ends before any work (the unreachable one after Dask's connect timeout)
    import dask
    monkeypatch.setitem(dask.config.config["distributed"]["comm"]["timeouts"], "connect", "1s")
    code = main(["fuzz", "wort", "--examples", "1", "--quiet", "--dask", address, "--bugdir", str(tmp_path / "b")])
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("crashcheck: error: ") and needle in lines[0], lines
    assert not list((tmp_path / "b").glob("*"))          # no journal, no records left


def test_dask_not_installed_is_one_line():
    # distributed made unimportable in the child, as on a machine without crashcheck[dask]
    code = ("import sys; sys.modules['distributed'] = None; from crashcheck.harness.cli.main import main; "
            "sys.exit(main(['fuzz', 'wort', '--examples', '1', '--quiet', '--dask', 'local:1']))")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.strip() == ("crashcheck: error: --dask needs Dask distributed, which is not "
                                  "installed (distributed); pip install 'crashcheck[dask]'"), res.stderr


def test_jobs_and_dask_together_are_refused(capsys):
    code = main(["fuzz", "wort", "--examples", "1", "--jobs", "2", "--dask", "local:1"])
    assert code == 2 and "give one" in capsys.readouterr().err
