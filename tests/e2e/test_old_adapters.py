"""Adapters written for earlier releases keep building and fuzzing (issue 49.4): each folder of
tests/fixtures/old_adapters (README.md there says which style and release) is built with
`crashcheck build` as its comment says and fuzzed briefly: clean, or its seeded bug found.

The C++ adapter with its own global operator new and delete into the pool is the one that broke
(`operator delete(void*) is defined twice ... rename it`): crashcheck's own operator delete forms
(trees/common/pm_malloc.c) now give way to the user's."""
import json
import subprocess
from pathlib import Path

import pytest

from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
OLD = ROOT / "tests" / "fixtures" / "old_adapters"

# (name, folder, build arguments after the name, fuzz arguments, exit status, classes found, the
# file whose operator delete(void*) the driver must have: the user's, not crashcheck's weak one)
CASES = [
    pytest.param("oldcxx", "cxx_own_new", ["--adapter", "adapter.cpp"], [], 0, set(), "adapter.cpp",
                 id="cxx-own-new-delete"),
    pytest.param("oldc", "c_first_api", ["--adapter", "adapter.c", "--bugs", "bugs.json"],
                 ["--bug", "link-no-flush"], 1, {"lost-durable-write"}, None, id="c-first-api",
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize("name, folder, build, fuzz, status, classes, delete_in", CASES)
def test_old_adapter_builds_and_fuzzes(instrument_built, tmp_path, name, folder, build, fuzz, status, classes,
                                       delete_in):
    args = [OLD / folder / a if a.endswith((".c", ".cpp", ".json")) else a for a in build]
    res = run_cli("build", name, *args)
    assert res.returncode == 0, res.stderr
    if delete_in:
        syms = subprocess.run(["nm", "-l", "--defined-only", ROOT / "build" / "user" / name / "driver"],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        delete = [line for line in syms if line.split("\t")[0].endswith(" _ZdlPv")]
        assert delete and delete_in in delete[0], delete
    out = tmp_path / "r.json"
    res = run_cli("fuzz", name, *fuzz, "--examples", "8", "--seed", "1", "--quiet", "--json", out, cwd=tmp_path)
    assert res.returncode == status, res.stdout + res.stderr
    bugs = json.loads(out.read_text())["bugs"]
    assert {b["class"] for b in bugs if not b["expected"]} == classes, [b["detail"] for b in bugs]
