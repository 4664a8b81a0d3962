"""The pass built for an LLVM other than the default one, for the pass's own tests: which LLVMs,
where their builds are, building them once.

Which: $CRASHCHECK_TEST_LLVM (space-separated versions, default "19": the second LLVM
scripts/setup installs and builds, so CI runs the pass tests with two). Where: build-llvmN/ of the
checkout (`make BUILD=build-llvmN LLVM=N instrument`: the pass and the runtime, all the
instrumentation corpus and the pool tests link). A test process runs that make once, under a
file lock (pytest -n's workers share the folder); after scripts/setup it has nothing to do.

An LLVM that is not installed skips its tests with the apt line that installs it, except in this
repository's CI (.ci/run sets CRASHCHECK_CI=1), where it fails them: CI promises two LLVMs.
"""
from __future__ import annotations

import fcntl
import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
OTHER = os.environ.get("CRASHCHECK_TEST_LLVM", "19").split()


def _default_major() -> str:
    build = Path(os.environ.get("CRASHCHECK_BUILD") or ROOT / "build")
    try:
        text = (build / "toolchain.env").read_text()
    except OSError:
        return ""
    return next((line.split("=", 1)[1] for line in text.splitlines() if line.startswith("LLVM_MAJOR=")), "")


def missing(version: str) -> str | None:
    """Why LLVM VERSION's pass cannot be built here (one line), or None."""
    for tool in (f"llvm-config-{version}", f"clang-{version}", f"clang++-{version}"):
        if shutil.which(tool) is None:
            return (f"LLVM {version} is not installed ({tool} not found; apt install clang-{version} "
                    f"llvm-{version}-dev, or scripts/setup)")
    return None


@functools.lru_cache(maxsize=None)
def _make(version: str) -> tuple[Path, str]:
    build = ROOT / f"build-llvm{version}"
    build.mkdir(exist_ok=True)
    with open(build / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = subprocess.run(["make", "-s", f"BUILD={build.name}", f"LLVM={version}", "instrument"], cwd=ROOT,
                             capture_output=True, text=True, timeout=1200)
    return build, ("" if res.returncode == 0 else res.stdout + res.stderr)


def build(version: str) -> Path:
    """build-llvmVERSION/, built; skips (fails under CI) when that LLVM is not installed."""
    why = missing(version)
    if why is not None:
        if os.environ.get("CRASHCHECK_CI"):
            pytest.fail(f"{why}: CI runs the pass tests with LLVM {version} too (scripts/setup installs it)")
        pytest.skip(why)
    if _default_major() == version:
        pytest.skip(f"the default build is LLVM {version} already (its tests are the unmarked ones)")
    folder, errors = _make(version)
    assert not errors, f"the pass does not build with LLVM {version}:\n{errors}"
    return folder
