"""Functional tests of HART (build/trees/hart/driver-native): random histories of byte-string keys
(1..24 bytes, shared prefixes, keys shorter than the 2-byte hash key) and values of 1..16 bytes (so
both value chains are used and updates move values between them) against a Python dict, no crash,
HART's own check run after every operation (`run --check`); the pool is then checked (recovered, no
violations, nothing unreachable), reopened, drained and checked again.  The multi-threaded test builds trees/hart/test/hart_mt.c with
HART's sources, trees/common/pm_alloc.c and the runtime, and runs writers and a reader in parallel.
"""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path

import pytest

from dict_model import check_history_then_drain, check_short_keys_and_prefixes, key_pool
from treeutil import CLANG, ROOT, run_driver

DRIVER = ROOT / "build" / "trees" / "hart" / "driver-native"


CASES = {  # name: (keys, hash keys, operations)
    "one-art": (40, 1, 600),
    "few-arts": (200, 6, 1500),
    "many-keys": (3000, 40, 8000),   # several chunks per chain: recycling of non-head chunks
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hart_history_matches_dict(trees_built, tmp_path, case):
    nkeys, prefixes, n = CASES[case]
    rng = random.Random(f"hart-{case}")
    check_history_then_drain(DRIVER, tmp_path / "pool", rng, key_pool(rng, nkeys, prefixes), n)


def test_hart_short_keys_and_prefixes(trees_built, tmp_path):
    """Keys shorter than the hash key, keys that are prefixes of others, and 8-byte keys."""
    check_short_keys_and_prefixes(DRIVER, tmp_path / "pool")


def test_hart_info(trees_built):
    res = run_driver(DRIVER, ["info"])
    assert json.loads(res.stdout) == {"name": "hart", "key_kind": "bytes", "value_size": 16, "value_min": 1, "threads": True, "own_pool": False, "pass_traces_pool": False,
                                      "model": "ordered_map",
                                      "map_ops": ["insert", "update", "delete", "lookup", "scan"]}


@pytest.fixture(scope="module")
def hart_mt(trees_built, tmp_path_factory) -> Path:
    """trees/hart/test/hart_mt.c linked with HART, pm_alloc.c and the runtime."""
    out = tmp_path_factory.mktemp("hart_mt") / "hart_mt"
    srcs = [str(p) for p in sorted((ROOT / "trees" / "hart").glob("*.c")) if p.name != "adapter.c"]
    cmd = [CLANG, "-O2", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread",
           f"-I{ROOT / 'trees' / 'common'}", f"-I{ROOT / 'instrument' / 'include'}", "-o", str(out),
           str(ROOT / "trees" / "hart" / "test" / "hart_mt.c"), *srcs,
           str(ROOT / "trees" / "common" / "pm_alloc.c"), str(ROOT / "build" / "libcrashcheck_rt.a"),
           "-lpthread", "-ldl"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


@pytest.mark.parametrize("threads,seed", [(1, 1), (4, 2), (8, 3)])
def test_hart_multithreaded(hart_mt, tmp_path, threads, seed):
    res = subprocess.run([str(hart_mt), str(tmp_path / "pool"), str(threads), "20000", str(seed)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
