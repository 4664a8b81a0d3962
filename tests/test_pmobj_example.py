"""examples/pmobj_hash: a libpmemobj hash map (transactions, a non-transactional fast path) fuzzed
with `--tracer pmemcheck`. Its pool is mapped by libpmemobj itself (the adapter's create_file /
open_file), post-crash images are opened with pmemobj_open so libpmemobj's own transaction
recovery runs first, and the pass alone cannot trace it. Without its seeded bug it passes; with it
(the fast path taken for a two-word change) the torn value is found (slow: each traced run and
each shrinking step runs under Valgrind)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from userbuild import build_once

EXAMPLE = ROOT / "examples" / "pmobj_hash"


@pytest.fixture(scope="module")
def pmobj(instrument_built, pmemcheck):
    if not Path("/usr/include/libpmemobj.h").exists():
        pytest.skip("libpmemobj-dev not installed (scripts/setup installs it)")
    build_once("pmobj_hash", EXAMPLE / "pmobj_hash.c", "--adapter", EXAMPLE / "adapter.c",
               "--ldflags", "-lpmemobj")
    return {"CRASHCHECK_PMEMCHECK": pmemcheck}


def test_the_pass_alone_cannot_trace_it(pmobj):
    res = run_cli("fuzz", "pmobj_hash", "--examples", "1")
    assert res.returncode == 2
    assert "maps its pool itself" in res.stderr and "--tracer pmemcheck" in res.stderr
    lazy = run_cli("fuzz", "pmobj_hash", "--tracer", "pmemcheck", "--strategy", "lazy", "--examples", "1",
                   env_extra=pmobj)
    assert lazy.returncode == 2 and "cannot tell its states apart" in lazy.stderr


def test_the_correct_map_passes(pmobj, tmp_path):
    res = run_cli("fuzz", "pmobj_hash", "--tracer", "pmemcheck", "--examples", "2", "--limit", "8",
                  "--json", tmp_path / "r.json", "--quiet", env_extra=pmobj, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    assert r["strategy"] == "bounded"          # its default: lazy cannot see libpmemobj's reads
    st = r["stats"]
    assert st["histories"] == 2 and st["crash_points"] > 50 and st["states_checked"] > 100
    assert r["bugs"] == []


@pytest.mark.slow
def test_the_fast_path_bug_is_found(pmobj, tmp_path):
    res = run_cli("fuzz", "pmobj_hash", "--bug", "fast-two-words", "--tracer", "pmemcheck", "--examples", "12",
                  "--limit", "8", "--stop-on", "torn-update", "--json", tmp_path / "r.json", "--quiet",
                  env_extra=pmobj, timeout=1800)
    assert res.returncode == 1, res.stdout + res.stderr
    r = json.loads((tmp_path / "r.json").read_text())
    [bug] = r["bugs"]
    assert bug["class"] == "torn-update" and bug["tracer"] == "pmemcheck"
    assert bug["lost"][0]["site"]["file"] == "examples/pmobj_hash/pmobj_hash.c"
    assert any(op.startswith("update") for op in bug["history"])


def test_build_without_the_library_shows_the_linker(pmobj, tmp_path):
    """--ldflags is what brings libpmemobj in: without it the link fails with the linker's words."""
    src = tmp_path / "src"
    shutil.copytree(EXAMPLE, src)
    (src / "bugs.json").unlink()
    res = run_cli("build", "pmobj_nolib", src / "pmobj_hash.c", "--adapter", src / "adapter.c")
    assert res.returncode == 2
    assert "undefined reference to `pmemobj_" in res.stderr or "undefined symbol: pmemobj_" in res.stderr
