"""The thesis key distributions (harness/cli/keys.py) and `crashcheck stats` on the traced drivers."""
from __future__ import annotations

import json
import subprocess

import pytest

from crashcheck.harness.cli import keys
from cli_run import run_cli


@pytest.mark.parametrize("kind", sorted(keys.GENERATORS))
def test_keys_are_distinct_seeded_u64(kind):
    a = keys.generate(kind, 1000, seed=3)
    assert len(a) == 1000 and len(set(a)) == 1000
    assert all(0 <= k < 1 << 64 for k in a)
    assert keys.generate(kind, 1000, seed=3) == a
    assert keys.generate(kind, 1000, seed=4) != a  # the order at least depends on the seed


def test_dense_is_one_to_n_shuffled():
    a = keys.dense(500, seed=1)
    assert sorted(a) == list(range(1, 501)) and a != sorted(a)


def test_sparse_spreads_over_the_whole_range():
    a = keys.sparse(2000, seed=1)
    top_nibbles = {k >> 60 for k in a}
    assert len(top_nibbles) == 16
    assert min(a) < 1 << 62 and max(a) > 3 << 62


def test_clustered_is_runs_of_64_consecutive_keys():
    a = sorted(keys.clustered(64 * 20, seed=2))
    runs = [a[i:i + 64] for i in range(0, len(a), 64)]
    assert len(runs) == 20
    for run in runs:
        assert run == list(range(run[0], run[0] + 64))
    assert len({r[0] >> 32 for r in runs}) > 10  # clusters far apart


def test_unknown_distribution_is_rejected():
    with pytest.raises(ValueError, match="known: dense, sparse, clustered"):
        keys.generate("zipf", 10)


def crashcheck(*args: str) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=120)


@pytest.mark.parametrize("kind", ["dense", "sparse", "clustered"])
def test_stats_wort_json(trees_built, kind):
    res = crashcheck("stats", "wort", "--keys", kind, "--ops", "300", "--json", "--seed", "5")
    assert res.returncode == 0, res.stderr
    table = json.loads(res.stdout)
    assert list(table) == ["insert", "update", "lookup", "delete"]
    assert table["lookup"] == {"stores": 0.0, "flushes": 0.0, "fences": 0.0}
    ins, upd, dele = table["insert"], table["update"], table["delete"]
    # an insert persists at least a value, a leaf, their allocation bits and the link
    assert ins["flushes"] >= 5 and ins["fences"] >= 8 and ins["stores"] >= ins["flushes"]
    # an update: new value + its bit, the pointer swing, the old value's bit (4 persists), and the
    # allocator's zeroing of the new value made durable before pm_alloc returns (one flush, one fence)
    assert upd == {"stores": 5.0, "flushes": 5.0, "fences": 9.0}
    assert 3 <= dele["flushes"] < ins["flushes"]


def test_stats_table_and_determinism(trees_built):
    a = crashcheck("stats", "wort", "--keys", "sparse", "--ops", "200")
    b = crashcheck("stats", "wort", "--keys", "sparse", "--ops", "200")
    assert a.returncode == 0, a.stderr
    assert a.stdout == b.stdout
    lines = a.stdout.splitlines()
    assert lines[1].split() == ["operation", "stores", "flushes", "fences"]
    assert [line.split()[0] for line in lines[2:]] == ["insert", "update", "lookup", "delete"]


@pytest.mark.parametrize("args,needle", [
    (["stats", "nosuchtree"], "known: "),
    (["stats", "wort", "--ops", "0"], "--ops: must be at least 1, not 0"),
])
def test_stats_user_errors(trees_built, args, needle):
    res = crashcheck(*args)
    assert res.returncode == 2
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1
