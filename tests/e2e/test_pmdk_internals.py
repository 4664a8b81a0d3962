"""PMDK's own libpmemobj built with the pass finds a published bug: pmem/pmdk#5613 (tx_xfree of an
object allocated in the same transaction drops a merged range from the commit's flushes) in a
PMDK tree's HEAD, with bench/pmdk-internals/pmdkbugs.c; the same transaction without the free is
clean. Needs a PMDK source tree: CRASHCHECK_PMDK_TREE=PATH (it is cloned, never touched; or
CRASHCHECK_PMDK_BUILD=OUT, an instrument/build-pmdk output to reuse). CI has neither (no network
beyond the package registries, no PMDK tree), so it skips there; bench/pmdk-internals/run covers
#4945 at the commits around its fix too."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT
from test_program_lazy import _run

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
PROGRAM = ROOT / "bench" / "pmdk-internals" / "pmdkbugs.c"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("instrument_built")]


@pytest.fixture(scope="module")
def pmdkbugs(tmp_path_factory) -> Path:
    built = os.environ.get("CRASHCHECK_PMDK_BUILD")
    tree = os.environ.get("CRASHCHECK_PMDK_TREE")
    if not built and not tree:
        pytest.skip("no PMDK tree: set CRASHCHECK_PMDK_TREE=PATH (or CRASHCHECK_PMDK_BUILD=OUT)")
    out = tmp_path_factory.mktemp("pmdk")
    if not built:
        subprocess.run(["git", "clone", "-q", tree, out / "tree"], check=True)
        subprocess.run([ROOT / "instrument" / "build-pmdk", out / "tree", out / "build"], check=True,
                       capture_output=True)
        built = out / "build"
    subprocess.run([CC, "--pmdk", built, "-O1", "-g", PROGRAM, "-lpmemobj", "-o", out / "pmdkbugs"],
                   check=True, capture_output=True)
    return out / "pmdkbugs"


def test_5613_is_found_inside_the_library_and_the_control_is_clean(pmdkbugs, tmp_path):
    setup = f"{pmdkbugs} create pool && {pmdkbugs} xfree-setup pool"
    common = ["--strategy", "lazy", "--setup", setup, "--checker", f"{pmdkbugs} check {{image}}",
              "--", pmdkbugs, "xfree", "pool"]
    code, out, err, res = _run(tmp_path, *common)
    assert code == 1, out + err
    assert res["stats"]["lazy_fallback"] is None
    [bug] = res["bugs"]
    # the lost store is the program's change inside the merged range, never flushed at commit
    assert bug["group"].startswith("lost: ") and "pmdkbugs.c" in bug["group"]
    assert "committed change" in bug["detail"]
    code, out, err, res = _run(tmp_path, *common, "keep")
    assert code == 0 and not res["bugs"], out + err
