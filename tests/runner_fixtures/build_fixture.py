"""Builds the checker-runner fixture programs (C files in this folder) into a given folder.

Owns: how a fixture is compiled. A fixture links the runtime library (build/libcrashcheck_rt.a,
made with `make` when the build knows how; crashsim/build.mk puts the runner in it); if no archive
with the runner can be had, it is compiled together with crashsim/runner/*.c instead, so the
fixtures work on a tree where the rest of the runtime is broken. Used by
tests/unit/test_crashsim_runner.py and bench/crashsim_throughput.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from crashcheck.harness.target import toolchain

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RUNNER = ROOT / "crashsim" / "runner"   # runner.h, and the runner's sources for the fallback
# $CLANG, else the clang the pass was built for (build/toolchain.env)
CLANG = os.environ.get("CLANG") or toolchain.current().clang


def runtime_archive() -> Path | None:
    """build/libcrashcheck_rt.a, brought up to date, if it holds cc_runner_serve; else None."""
    archive = ROOT / "build" / "libcrashcheck_rt.a"
    if (ROOT / "instrument" / "build.mk").exists():
        subprocess.run(["make", "-s", str(archive.relative_to(ROOT))], cwd=ROOT,
                       capture_output=True, text=True)
    if not archive.exists() or shutil.which("nm") is None:
        return None
    syms = subprocess.run(["nm", "-g", str(archive)], capture_output=True, text=True).stdout
    return archive if " T cc_runner_serve" in syms else None


def build(name: str, out_dir: Path, *, opt: str = "-O1", instrumented: bool = False) -> Path:
    """Compile tests/runner_fixtures/NAME.c into OUT_DIR/NAME; returns the program's path.
    INSTRUMENTED: with the crashcheck pass (instrument/bin/crashcheck-cc, which links the
    runtime), for fixtures whose checks lazy exploration must see reading."""
    out_dir.mkdir(parents=True, exist_ok=True)
    out = out_dir / name
    if instrumented:
        cmd = [str(ROOT / "instrument" / "bin" / "crashcheck-cc"), opt, "-Wall", "-Wextra", "-Werror",
               "-I", str(RUNNER), str(HERE / f"{name}.c"), "-o", str(out)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"building fixture {name} failed:\n{' '.join(cmd)}\n{res.stderr}")
        return out
    cmd = [CLANG, opt, "-g", "-Wall", "-Wextra", "-Werror", "-I", str(ROOT / "instrument" / "include"),
           "-I", str(RUNNER), str(HERE / f"{name}.c"), "-o", str(out)]
    archive = runtime_archive()
    if archive is not None:
        cmd += [str(archive), "-lpthread"]
    else:
        cmd += [str(p) for p in sorted(RUNNER.glob("*.c"))]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"building fixture {name} failed:\n{' '.join(cmd)}\n{res.stderr}")
    return out
