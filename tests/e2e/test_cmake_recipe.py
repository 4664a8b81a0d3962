"""docs/ci.md's CMake recipe works: a project that includes cmake/Crashcheck.cmake and calls
crashcheck_structure() builds the structure with `crashcheck build` under its own build folder
(never into crashcheck's), and its CTest test fuzzes it: passing on the correct structure,
failing on a seeded bug, with the report and results left in the build folder."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PMHASH = ROOT / "examples" / "pmhash"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake is not installed")]


def _project(tmp: Path, cflags: str) -> Path:
    src = tmp / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(f"""
cmake_minimum_required(VERSION 3.16)
project(uses_crashcheck C)
enable_testing()
include({ROOT}/cmake/Crashcheck.cmake)
crashcheck_structure(pmhashcm
    SOURCES {PMHASH}/pmhash.c {PMHASH}/pmhash.h
    ADAPTER {PMHASH}/adapter.c
    {cflags}
    FUZZ --examples 6 --seed 1 --shrink 4)
""")
    return src


def _build_and_test(tmp: Path, cflags: str = "") -> tuple[subprocess.CompletedProcess, Path]:
    src, out = _project(tmp, cflags), tmp / "build"
    exe = Path(sys.executable).parent / "crashcheck"
    subprocess.run(["cmake", "-S", src, "-B", out, f"-DCRASHCHECK={exe}"], check=True, capture_output=True)
    subprocess.run(["cmake", "--build", out], check=True, capture_output=True, timeout=600)
    return subprocess.run(["ctest", "--output-on-failure"], cwd=out, capture_output=True, text=True, timeout=900), out


def test_the_cmake_function_builds_and_fuzzes_a_correct_structure(tmp_path):
    before = sorted((ROOT / "build" / "user").glob("pmhashcm*"))
    res, out = _build_and_test(tmp_path)
    assert res.returncode == 0, res.stdout
    assert (out / "crashcheck-builds" / "pmhashcm" / "meta.json").is_file()
    assert (out / "crashcheck-pmhashcm.html").is_file() and (out / "crashcheck-pmhashcm.json").is_file()
    assert sorted((ROOT / "build" / "user").glob("pmhashcm*")) == before      # nothing in the checkout


def test_ctest_fails_on_a_seeded_bug(tmp_path):
    import json
    [bug] = json.loads((PMHASH / "bugs.json").read_text())
    res, out = _build_and_test(tmp_path, f"CFLAGS -D{bug['define']}")
    assert res.returncode != 0
    found = json.loads((out / "crashcheck-pmhashcm.json").read_text())
    assert bug["class"] in {b["class"] for b in found["bugs"]}
