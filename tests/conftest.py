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


@pytest.fixture(scope="session")
def readers_base(tmp_path_factory):
    """Real files for the readers' hostile-input tests (tests/readers_base.py): a small WORT trace,
    a results file of a short fuzz run of a seeded bug, and one of its bug records."""
    from readers_base import make_base
    return make_base(tmp_path_factory.mktemp("readers-base"))


@pytest.fixture(scope="session")
def trees_built() -> list[Path]:
    """Every native driver, after building them (`make -s trees`, tests/treeutil.py)."""
    from treeutil import TREES_DIR, build_trees
    ok, output = build_trees()
    if not ok:
        pytest.fail(f"make -s trees failed:\n{output}")
    drivers = sorted(TREES_DIR.glob("*/driver-native"))
    assert drivers, "make trees built no driver"
    return drivers


@pytest.fixture(scope="session")
def pmemcheck() -> str:
    """The pmemcheck command the tests use (tests/pmemcheck_tool.py); the test skips, saying why,
    when there is none."""
    from pmemcheck_tool import find_pmemcheck
    tool = find_pmemcheck()
    if tool is None:
        pytest.skip("pmemcheck not found ($CRASHCHECK_PMEMCHECK, PATH, ../shared/tools/pmemcheck)")
    return tool
