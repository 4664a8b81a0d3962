"""WOART and ART+CoW without crashes (both trees share one engine, so one test file): node growth
4 -> 16 -> 48 -> 256 and shrink back with its hysteresis, merges at every depth of the 8-byte
keys, Hypothesis histories over keys with long shared paths against a dict, and deterministic
images.  The generic random-history tests of every tree are in test_trees_functional.py.

Node types are observed through the check JSON: the biggest allocated object is the node under
test (leaves and values are 16 bytes at most), and each node type has its own size.
"""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dict_model import Model, check_pool
from treeutil import TREES_DIR, key

TREES = ("woart", "artcow")
# sizeof of the node types (trees/art_engine/art_nodes.h): NODE4 56, NODE16 168, NODE48 656, NODE256 2064
NODE_SIZE = {4: 56, 16: 168, 48: 656, 256: 2064}


def driver(tree: str) -> Path:
    return TREES_DIR / tree / "driver-native"


def run(tree: str, pool: Path, ops: list[str], create: bool = False) -> list[str]:
    args = [str(driver(tree)), "run", "--pool", str(pool), "--size", "4m"] + (["--create"] if create else [])
    res = subprocess.run(args, input="\n".join(ops) + "\n", capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.splitlines()


def check(tree: str, pool: Path, model: Model) -> dict:
    """`driver check` of POOL: recovered, no violation, no leak, dump equal to MODEL."""
    return check_pool(driver(tree), pool, model, "--size", "4m")


def biggest_node(result: dict) -> int:
    """Capacity of the biggest node in the image (4 if only NODE4s, 0 if nothing but leaves)."""
    sizes = [size for _, size in result["allocated"]]
    return max((cap for cap, size in NODE_SIZE.items() if any(s >= size for s in sizes)), default=0)


def apply(model: Model, ops: list[str]) -> list[str]:
    return [model.apply(line) for line in ops]


@pytest.mark.parametrize("tree", TREES)
def test_node_grows_4_16_48_256_and_shrinks_back(trees_built, tmp_path, tree):
    pool = tmp_path / "pool"
    model = Model()
    run(tree, pool, [], create=True)
    count = 0
    # growth: a node is the smallest type that holds its children
    for target, cap in ((4, 4), (5, 16), (16, 16), (17, 48), (48, 48), (49, 256), (60, 256)):
        ops = [f"insert {key(6, low=i)} {i}" for i in range(count, target)]
        assert run(tree, pool, ops) == apply(model, ops)
        count = target
        assert biggest_node(check(tree, pool, model)) == cap, f"{count} children"
    # shrink with hysteresis: a node keeps its type down to a bound well below its capacity;
    # ART+CoW copies a NODE16 on every change anyway, so its copy is always the smallest type
    n16_at_4 = 4 if tree == "artcow" else 16
    for target, cap in ((38, 256), (37, 48), (13, 48), (12, 16), (4, n16_at_4), (3, 4), (2, 4)):
        ops = [f"delete {key(6, low=i)}" for i in range(target, count)]
        assert run(tree, pool, ops) == apply(model, ops)
        count = target
        assert biggest_node(check(tree, pool, model)) == cap, f"{count} children"
    # one child left: path compression removes the node, only the (NODE4) root stays
    ops = [f"delete {key(6, low=1)}", f"lookup {key(6, low=0)}", "scan 0 5"]
    assert run(tree, pool, ops) == apply(model, ops)
    result = check(tree, pool, model)
    assert len([s for _, s in result["allocated"] if s >= NODE_SIZE[4]]) == 1
    # and empty
    ops = [f"delete {key(6, low=0)}", "scan 0 5", f"insert {key(6, low=0)} 9"]
    assert run(tree, pool, ops) == apply(model, ops)
    check(tree, pool, model)


@pytest.mark.parametrize("tree", TREES)
@pytest.mark.parametrize("order", ["forward", "backward", "inside-out"])
def test_paths_split_and_merge_at_every_depth(trees_built, tmp_path, tree, order):
    # keys that first differ from BASE at byte i, for every i: a chain of compressed nodes, one per
    # depth, each split in turn; deletes then merge them back in ORDER
    base = 0x0123456789ABCDEF
    keys = [base] + [base ^ (0x80 >> (i % 8)) << 8 * (7 - i) for i in range(8)]
    keys += [k ^ 1 for k in keys[1:]]   # a sibling for each: nodes with two leaves at the bottom
    ops = [f"insert {k} {i}" for i, k in enumerate(keys)]
    ops += [f"lookup {k}" for k in keys] + [f"scan {keys[3]} 4", "scan 0 100"]
    dels = {"forward": keys, "backward": keys[::-1], "inside-out": keys[4::-1] + keys[5:]}[order]
    model = Model()
    pool = tmp_path / "pool"
    assert run(tree, pool, ops, create=True) == apply(model, ops)
    check(tree, pool, model)
    for k in dels:
        ops = [f"delete {k}", f"lookup {k}", "scan 0 100"]
        assert run(tree, pool, ops) == apply(model, ops)
        check(tree, pool, model)
    assert model.data == {}


@pytest.mark.parametrize("tree", TREES)
def test_same_history_same_image(trees_built, tmp_path, tree):
    ops = [f"insert {key(i % 7, i % 3, low=i)} {i}" for i in range(80)]
    ops += [f"update {key(i % 7, i % 3, low=i)} {i * 3}" for i in range(0, 80, 3)]
    ops += [f"delete {key(i % 7, i % 3, low=i)}" for i in range(0, 80, 2)]
    images = []
    for n in range(2):
        pool = tmp_path / f"pool{n}"
        run(tree, pool, ops, create=True)
        images.append(pool.read_bytes())
    assert images[0] == images[1]


# Keys from few distinct bytes per position: deep shared paths, splits and merges everywhere.
KEYS = st.lists(st.sampled_from([0, 1, 0x80, 0xFF]), min_size=8, max_size=8).map(
    lambda bs: int.from_bytes(bytes(bs), "big"))
OPS = st.lists(st.one_of(
    st.tuples(st.just("insert"), KEYS, st.integers(0, 2**64 - 1)),
    st.tuples(st.just("update"), KEYS, st.integers(0, 2**64 - 1)),
    st.tuples(st.just("delete"), KEYS),
    st.tuples(st.just("lookup"), KEYS),
    st.tuples(st.just("scan"), KEYS, st.integers(0, 6)),
), min_size=1, max_size=120)


@pytest.mark.parametrize("tree", TREES)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=OPS)
def test_hypothesis_histories_match_dict(trees_built, tmp_path_factory, tree, ops):
    lines = [" ".join(str(x) for x in op) for op in ops]
    model = Model()
    pool = tmp_path_factory.mktemp("h") / "pool"
    assert run(tree, pool, lines, create=True) == apply(model, lines)
    check(tree, pool, model)
