"""Which LLVM: instrument/select-llvm's choice, the toolchain record a build leaves
(build/toolchain.env) and its readers (crashcheck-cc, harness/target/toolchain.py).

Cheap: no pass is built here (tests/unit/test_instrument_llvm_versions.py, slow, builds and runs
the corpus with another LLVM).
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from crashcheck.harness.target import build_compile, toolchain

ROOT = Path(__file__).resolve().parents[2]
SELECT = ROOT / "instrument" / "select-llvm"
CC = ROOT / "instrument" / "bin" / "crashcheck-cc"


def select(*args):
    return subprocess.run([str(SELECT), *args], capture_output=True, text=True, timeout=30)


def test_the_default_is_llvm_16_and_a_version_picks_its_clang():
    if shutil.which("llvm-config-16") is None:
        pytest.skip("llvm-config-16 not installed")
    assert select().stdout.split() == ["llvm-config-16", "clang-16", "clang++-16", "16"]
    assert select("", "llvm-config-16").stdout.split()[1:] == ["clang-16", "clang++-16", "16"]


def test_an_absent_or_unsupported_llvm_is_one_line():
    res = select("13")
    assert res.returncode == 1 and res.stdout == ""
    assert res.stderr.splitlines() == [
        "llvm-config-13 not found (apt install clang-13 llvm-13-dev, or pick another: make LLVM=N, 14..19)"]
    fake = shutil.which("true")   # runs, but is no llvm-config
    res = select(str(fake))
    assert res.returncode == 1 and res.stdout == "" and len(res.stderr.splitlines()) == 1


def test_make_refuses_an_unknown_llvm_before_building_anything(tmp_path):
    res = subprocess.run(["make", "-s", f"BUILD={tmp_path / 'b'}", "LLVM=13", "instrument"], cwd=ROOT,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "llvm-config-13 not found" in res.stderr
    assert not (tmp_path / "b" / "libcrashcheck_pass.so").exists()


def _record(build: Path, major: str):
    build.mkdir()
    (build / "toolchain.env").write_text(
        f"LLVM_MAJOR={major}\nLLVM_CONFIG=llvm-config-{major}\nCLANG=clang-{major}\nCLANGXX=clang++-{major}\n")
    (build / "libcrashcheck_pass.so").write_text("")
    (build / "libcrashcheck_rt.a").write_text("")


def test_the_harness_compiles_natively_with_the_clang_of_the_build(tmp_path, monkeypatch):
    _record(tmp_path / "b", "19")
    monkeypatch.delenv("CRASHCHECK_CLANG", raising=False)
    monkeypatch.delenv("CRASHCHECK_CLANGXX", raising=False)
    tc = toolchain.current(tmp_path / "b")
    assert (tc.major, tc.clang, tc.clangxx, tc.llvm_config) == (19, "clang-19", "clang++-19", "llvm-config-19")
    monkeypatch.setattr(toolchain.structures, "BUILD", tmp_path / "b")
    assert build_compile.compilers(traced=False) == {"c": "clang-19", "c++": "clang++-19"}
    monkeypatch.setenv("CRASHCHECK_CLANG", "/opt/clang")           # the override still wins
    assert build_compile.compilers(traced=False)["c"] == "/opt/clang"
    # a build from before the record: clang-16's, as it always was
    (tmp_path / "old").mkdir()
    monkeypatch.delenv("CRASHCHECK_CLANG")
    assert toolchain.current(tmp_path / "old").clang == "clang-16"


def _other_clang(than: str) -> str | None:
    return next((f"clang-{v}" for v in ("19", "14", "16") if v != than and shutil.which(f"clang-{v}")), None)


def test_crashcheck_cc_uses_the_recorded_clang_and_refuses_another_llvms(tmp_path):
    other = _other_clang("16")
    if other is None:
        pytest.skip("only one clang installed")
    major = other.split("-")[1]
    _record(tmp_path / "b", major)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CRASHCHECK_CLANG")}
    env["CRASHCHECK_BUILD"] = str(tmp_path / "b")
    # the recorded clang runs (--version: the (empty) plugin is never loaded)
    res = subprocess.run([str(CC), "--version"], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and f"clang version {major}." in res.stdout
    # an override of another LLVM: one line, exit 2, clang never started
    env["CRASHCHECK_CLANG"] = "clang-16" if shutil.which("clang-16") else _other_clang(major)
    res = subprocess.run([str(CC), "-c", "-x", "c", "/dev/null", "-o", str(tmp_path / "x.o")], env=env,
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1, res.stderr
    assert f"was built for LLVM {major}; unset the override" in res.stderr
    assert not (tmp_path / "x.o").exists()
