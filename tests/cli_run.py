"""The one way tests run the crashcheck CLI: `python -m crashcheck.harness.cli.main ARGS` from the project root,
output captured as text, as a user's shell would run `crashcheck ARGS`."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path = ROOT, timeout: float | None = None,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    # `crashcheck build` writes under the folder it runs in; the tests' builds go to build/user
    # (which the installation's search order also reads, docs/cli.md "Where builds are")
    if args and args[0] == "build" and "--out" not in map(str, args) and "-h" not in args:
        args = (*args, "--out", ROOT / "build" / "user")
    env = dict(os.environ, **env_extra) if env_extra else None
    return subprocess.run([sys.executable, "-m", "crashcheck.harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)
