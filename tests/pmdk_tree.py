"""An instrument/build-pmdk output for the slow tests that need PMDK's own libraries built with the
pass: CRASHCHECK_PMDK_BUILD=OUT (one to reuse), else CRASHCHECK_PMDK_TREE=PATH (cloned, never
touched, and built), else the test is skipped (CI has no PMDK tree)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_run import ROOT


def instrumented_pmdk(tmp_path_factory) -> Path:
    """The build-pmdk output folder (OUT/include, OUT/lib), made if need be."""
    built = os.environ.get("CRASHCHECK_PMDK_BUILD")
    if built:
        return Path(built)
    tree = os.environ.get("CRASHCHECK_PMDK_TREE")
    if not tree:
        pytest.skip("no PMDK tree: set CRASHCHECK_PMDK_TREE=PATH (or CRASHCHECK_PMDK_BUILD=OUT)")
    out = tmp_path_factory.mktemp("pmdk")
    subprocess.run(["git", "clone", "-q", tree, out / "tree"], check=True)
    subprocess.run([ROOT / "instrument" / "build-pmdk", out / "tree", out / "build"], check=True,
                   capture_output=True)
    return out / "build"
