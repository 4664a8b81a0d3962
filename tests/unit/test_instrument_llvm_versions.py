"""The pass with another LLVM: build it with LLVM N into build-llvmN/ and run the instrumentation
corpus (and the pool-error tests) against that build.

Slow (a pass build plus the whole corpus), so not in the default suite or CI, which test the
default LLVM only. Which versions: CRASHCHECK_TEST_LLVM (space-separated, default "14 19", Debian
12's other clangs); one that is not installed is skipped with the apt line that installs it.
docs/ci.md "Which LLVM" says when to run it.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VERSIONS = os.environ.get("CRASHCHECK_TEST_LLVM", "14 19").split()
CORPUS_TESTS = ["tests/unit/test_instrument_corpus.py", "tests/unit/test_instrument_pool.py"]


def _build(version: str) -> Path:
    for tool in (f"llvm-config-{version}", f"clang-{version}", f"clang++-{version}"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (apt install clang-{version} llvm-{version}-dev)")
    build = ROOT / f"build-llvm{version}"
    res = subprocess.run(["make", "-s", f"BUILD={build.name}", f"LLVM={version}", "instrument"], cwd=ROOT,
                         capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, f"the pass does not build with LLVM {version}:\n{res.stdout}{res.stderr}"
    return build


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_the_corpus_passes_with_the_pass_built_for_llvm(version):
    build = _build(version)
    # the build says which clang it is for, and crashcheck-cc uses that one
    assert f"LLVM_MAJOR={version}\n" in (build / "toolchain.env").read_text()
    env = {**os.environ, "CRASHCHECK_BUILD": str(build)}
    env.pop("CRASHCHECK_CLANG", None)
    env.pop("CRASHCHECK_CLANGXX", None)
    res = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-q", "-p", "no:cacheprovider", *CORPUS_TESTS],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=1800)
    tail = "\n".join(res.stdout.splitlines()[-40:])
    assert res.returncode == 0, f"the corpus fails with LLVM {version}:\n{tail}"


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_a_plugin_in_another_llvms_clang_is_one_line_and_exit_2(version, tmp_path):
    build = _build(version)
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
