"""Shared pytest fixtures. Each fixture is small and owned by the part of the project it serves."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def instrument_built():
    """The pass plugin and runtime, built once per session (`make -s instrument`)."""
    res = subprocess.run(["make", "-s", "instrument"], cwd=ROOT, capture_output=True, text=True)
    if res.returncode != 0:
        pytest.fail(f"make -s instrument failed:\n{res.stdout}{res.stderr}")
    return ROOT / "build"
