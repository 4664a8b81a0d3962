"""The one way tests run the crashcheck CLI: `python -m harness.cli.main ARGS` from the project root,
output captured as text, as a user's shell would run `crashcheck ARGS`."""
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cli(*args: str, cwd: Path = ROOT, timeout: float | None = None,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, **env_extra) if env_extra else None
    return subprocess.run([sys.executable, "-m", "harness.cli.main", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=env)
