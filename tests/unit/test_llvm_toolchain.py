"""Which LLVM: instrument/select-llvm's choice, the toolchain record a build leaves
(build/toolchain.env) and its readers (crashcheck-cc, harness/target/toolchain.py).

Cheap: no pass is built here (tests/llvm_builds.py builds another LLVM's, which the corpus runs
against: tests/unit/test_instrument_corpus.py).
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


def _fake_llvm(folder: Path, version: str, *names: str) -> Path:
    """FOLDER holding llvm-config programs NAMES of LLVM VERSION, with their clang beside them, and
    head (select-llvm's one outside tool): a PATH with no other LLVM."""
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(f"#!/bin/sh\ncase \"$1\" in --version) echo {version};; --bindir) echo {folder};; esac\n")
    for name in ("clang", "clang++"):
        (folder / name).write_text("#!/bin/sh\nexit 0\n")
    for p in folder.iterdir():
        p.chmod(0o755)
    (folder / "head").symlink_to(shutil.which("head"))
    return folder


def test_without_llvm_16_the_llvm_config_on_path_is_picked(tmp_path):
    """No llvm-config-16: the machine's own `llvm-config` (LLVM 14..19), before any other
    llvm-config-N; one of another LLVM is passed over."""
    bin_ = _fake_llvm(tmp_path / "bin", "18.1.8", "llvm-config", "llvm-config-19")
    env = {"PATH": str(bin_)}
    res = subprocess.run([str(SELECT)], capture_output=True, text=True, timeout=30, env=env)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["llvm-config", f"{bin_}/clang", f"{bin_}/clang++", "18"]
    _fake_llvm(tmp_path / "b16", "16.0.6", "llvm-config-16")      # the tested default still wins
    res = subprocess.run([str(SELECT)], capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{tmp_path / 'b16'}:{bin_}"})
    assert res.stdout.split()[0] == "llvm-config-16" and res.stdout.split()[3] == "16", res.stdout + res.stderr
    new = _fake_llvm(tmp_path / "new", "21.1.0", "llvm-config")       # unsupported: the newest N instead
    res = subprocess.run([str(SELECT)], capture_output=True, text=True, timeout=30,
                         env={"PATH": f"{new}:{bin_}"})
    assert res.stdout.split()[0] == "llvm-config-19", res.stdout + res.stderr


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
