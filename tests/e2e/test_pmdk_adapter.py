"""An adapter of ours on PMDK's own libpmemobj built with the pass (`crashcheck build --pmdk`):
examples/pmobj_hash fuzzed with crash points inside the library. The pool is made once, untraced
(harness/check/base_pool.py), so the correct map is clean (no recovery-crash inside
pmemobj_create, no nondeterminism from the pool's UUID) and its seeded bug (insert-no-add: a chain
head changed in a transaction without pmemobj_tx_add_range) is found with its class at its line.
Needs a PMDK tree (tests/pmdk_tree.py): CI has none, so it skips there; the fast twin with a
stand-in library is tests/e2e/test_pmdk_build.py."""
from __future__ import annotations

import json

import pytest

from cli_run import ROOT, run_cli
from pmdk_tree import instrumented_pmdk

EXAMPLE = ROOT / "examples" / "pmobj_hash"

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("instrument_built")]


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    pmdk = instrumented_pmdk(tmp_path_factory)
    out = tmp_path_factory.mktemp("builds")
    res = run_cli("build", "ph_pmdk", EXAMPLE / "pmobj_hash.c", "--adapter", EXAMPLE / "adapter.c",
                  "--bugs", EXAMPLE / "bugs.json", "--ldflags", "-lpmemobj", "--pmdk", pmdk, "--out", out,
                  timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr
    return out


def test_the_correct_map_is_clean_and_the_seeded_bug_is_found(builds, tmp_path):
    env = {"CRASHCHECK_BUILDS": str(builds)}
    ok = run_cli("fuzz", "ph_pmdk", "--examples", "2", "--limit", "4", "--seed", "1", "--quiet",
                 "--json", tmp_path / "ok.json", cwd=tmp_path, env_extra=env, timeout=1200)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    r = json.loads((tmp_path / "ok.json").read_text())
    assert r["bugs"] == [] and r["stats"]["crash_points"] > 20
    bad = run_cli("fuzz", "ph_pmdk", "--bug", "insert-no-add", "--examples", "2", "--limit", "4", "--seed", "1",
                  "--stop-on", "lost-durable-write", "--shrink", "0", "--no-fix", "--quiet",
                  "--json", tmp_path / "bad.json", cwd=tmp_path, env_extra=env, timeout=1800)
    assert bad.returncode == 1, bad.stdout + bad.stderr
    bugs = json.loads((tmp_path / "bad.json").read_text())["bugs"]
    assert any(b["class"] == "lost-durable-write" and "examples/pmobj_hash/pmobj_hash.c:122" in b["sites"]
               for b in bugs), [(b["class"], b["sites"]) for b in bugs]
    # nothing of the pool's creation: its UUID, its header before it was whole
    assert not any(b["class"] == "nondeterminism" or "invalid major version" in b["detail"] for b in bugs)
