"""`crashcheck build` once per test run, whichever pytest-xdist worker asks first.

Tests of a user's structure share its build; with `-n auto` several workers may need it at the same
time, and a build replacing a driver under a running fuzz ends that run (the driver changed). So
each build NAME happens once per test run (PYTEST_XDIST_TESTRUNUID, the same in every worker),
under a file lock; later callers find the stamp and reuse the drivers."""
import fcntl
import json
import os
import subprocess
from pathlib import Path

from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[1]


def build_once(name: str, *args) -> Path:
    """Build NAME with ARGS (unless this test run already did); returns its build folder."""
    users = ROOT / "build" / "user"
    users.mkdir(parents=True, exist_ok=True)
    run_id = os.environ.get("PYTEST_XDIST_TESTRUNUID", f"pid{os.getpid()}")
    stamp_text = f"{run_id} {' '.join(map(str, args))}"
    with open(users / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = users / f".{name}.stamp"
        if stamp.exists() and stamp.read_text() == stamp_text and (users / name / "meta.json").exists():
            return users / name
        res = run_cli("build", name, *args)
        assert res.returncode == 0, res.stderr
        stamp.write_text(stamp_text)
    return users / name


def traced_events(driver: Path, work: Path, ops: str) -> list[dict]:
    """The events (`trace show --json`) of DRIVER running the history OPS on a fresh pool in WORK."""
    trace = work / "t"
    res = subprocess.run([driver, "run", "--pool", work / "p", "--size", "8m", "--create", "-"],
                         input=ops, capture_output=True, text=True,
                         env={"CRASHCHECK_TRACE": str(trace), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr
    shown = run_cli("trace", "show", trace, "--json")
    return [json.loads(line) for line in shown.stdout.splitlines()]
