"""PMDK's own libpmemobj built with the pass finds a published bug: pmem/pmdk#5613 (tx_xfree of an
object allocated in the same transaction drops a merged range from the commit's flushes) in a
PMDK tree's HEAD, with bench/pmdk-internals/pmdkbugs.c; the same transaction without the free is
clean; and with our own fix of it (bench/pmdk-internals/run's FIX_5613: PMDK has no fix commit) the
same run is clean. Needs a PMDK source tree: CRASHCHECK_PMDK_TREE=PATH (it is cloned, never touched; or
CRASHCHECK_PMDK_BUILD=OUT, an instrument/build-pmdk output to reuse). CI has neither (no network
beyond the package registries, no PMDK tree), so it skips there; bench/pmdk-internals/run covers
#4945 at the commits around its fix too."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT
from pmdk_tree import instrumented_pmdk
from test_program_lazy import _run

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
PROGRAM = ROOT / "bench" / "pmdk-internals" / "pmdkbugs.c"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("instrument_built")]


@pytest.fixture(scope="module")
def pmdkbugs(tmp_path_factory) -> Path:
    built = instrumented_pmdk(tmp_path_factory)
    out = tmp_path_factory.mktemp("pmdk")
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


def _bench_script():
    """bench/pmdk-internals/run as a module (it has no .py suffix): its FIX_5613 edit."""
    path = ROOT / "bench" / "pmdk-internals" / "run"
    loader = importlib.machinery.SourceFileLoader("pmdk_internals_run", str(path))
    spec = importlib.util.spec_from_loader("pmdk_internals_run", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def test_5613_is_clean_with_our_fix(tmp_path):
    tree = os.environ.get("CRASHCHECK_PMDK_TREE")
    if not tree:
        pytest.skip("no PMDK tree: set CRASHCHECK_PMDK_TREE=PATH")
    subprocess.run(["git", "clone", "-q", tree, tmp_path / "tree"], check=True)
    _bench_script().apply_fix_5613(tmp_path / "tree")
    assert "keep the merged ranges past the freed object" in (tmp_path / "tree" / "src" / "libpmemobj" /
                                                               "tx.c").read_text()
    subprocess.run([ROOT / "instrument" / "build-pmdk", tmp_path / "tree", tmp_path / "build"], check=True,
                   capture_output=True)
    prog = tmp_path / "pmdkbugs"
    subprocess.run([CC, "--pmdk", tmp_path / "build", "-O1", "-g", PROGRAM, "-lpmemobj", "-o", prog],
                   check=True, capture_output=True)
    code, out, err, res = _run(tmp_path, "--strategy", "lazy", "--setup", f"{prog} create pool && {prog} "
                               "xfree-setup pool", "--checker", f"{prog} check {{image}}", "--", prog, "xfree", "pool")
    assert code == 0 and not res["bugs"], out + err
