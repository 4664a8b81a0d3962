"""The pass with another LLVM (tests/llvm_builds.py: build-llvmN/, $CRASHCHECK_TEST_LLVM, default
19): its build says which clang it is for, and a clang of another LLVM that loads it stops with one
line. The exact events of the instrumentation corpus and the pool errors with that LLVM are the
`llvm19` cases of test_instrument_corpus.py and test_instrument_pool.py (in the default suite, so
CI runs the pass tests with LLVM 16 and 19); `CRASHCHECK_TEST_LLVM="14 19"` adds LLVM 14
(docs/ci.md "Which LLVM").
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import llvm_builds

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version", llvm_builds.OTHER)
def test_the_build_records_its_llvm_and_crashcheck_cc_uses_its_clang(version, tmp_path):
    build = llvm_builds.build(version)
    assert f"LLVM_MAJOR={version}\n" in (build / "toolchain.env").read_text()
    env = {**os.environ, "CRASHCHECK_BUILD": str(build)}
    env.pop("CRASHCHECK_CLANG", None)
    res = subprocess.run([str(ROOT / "instrument" / "bin" / "crashcheck-cc"), "--version"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and f"clang version {version}." in res.stdout, res.stdout + res.stderr


@pytest.mark.parametrize("version", llvm_builds.OTHER)
def test_a_plugin_in_another_llvms_clang_is_one_line_and_exit_2(version, tmp_path):
    build = llvm_builds.build(version)
    other = next((f"clang-{v}" for v in ("16", "19", "14") if v != version and shutil.which(f"clang-{v}")), None)
    if other is None:
        pytest.skip("no second clang installed")
    src = tmp_path / "t.c"
    src.write_text("int x; int main(void) { x = 1; return 0; }\n")
    res = subprocess.run([other, f"-fpass-plugin={build / 'libcrashcheck_pass.so'}", "-c", str(src),
                          "-o", str(tmp_path / "t.o")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        f"crashcheck-pass: built for LLVM {version} but loaded by clang {other[6:]}; compile with "
        f"clang-{version} (crashcheck-cc picks it), or rebuild the pass: make LLVM={other[6:]}"]
