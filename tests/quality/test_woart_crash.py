"""WOART and ART+CoW under simulated crashes (both trees share one engine, so one test file).

The correct trees survive every crash state crashsim chooses in histories that exercise their
failure-atomic steps (NODE4 slot commits, NODE16 bitmaps, NODE48 index bytes, grow and shrink by
copy, prefix split and merge, out-of-place updates); every seeded bug of trees/woart/bugs.json and
trees/artcow/bugs.json is caught with the class its catalog names among the findings.

The crash states, their checks and their verdicts are the project's own (tests/crashutil.py:
crashsim's simulator and bounded strategy, the driver's runner, crashcheck.specs.oracle.judge_recovery with the
ordered map model and its follow-up, and specs/leaks.py with each tree's expect.json).
"""
from __future__ import annotations

import json

import pytest

from crashutil import crash_findings
from treeutil import ROOT, catalog, key, shared_folders, tree_sources

TREES = ("woart", "artcow")
CLASSES = {"lost-durable-write", "torn-update", "resurrected-delete", "wrong-value", "invariant-violation",
           "recovery-crash", "recovery-hang", "leak", "post-recovery-divergence"}


# Lazy expansion, NODE4 adds, a prefix split of a node with a 6-byte prefix (distinct bytes, so a
# torn header shows), updates (value objects recycled), a delete that merges the split node back
# (the inner child absorbs the prefix), inserts into the merged node, and lookups.
P = (1, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66)
SPLIT = [
    f"insert {key(*P, low=1)} 1",
    f"insert {key(*P, low=2)} 2",
    f"insert {key(*P, low=3)} 3",
    f"insert {key(1, 0x11, 0x99)} 4",
    f"update {key(*P, low=2)} 20",
    f"update {key(*P, low=2)} 21",
    f"delete {key(1, 0x11, 0x99)}",
    f"insert {key(*P, low=4)} 5",
    f"insert {key(2)} 6",
    f"lookup {key(*P, low=3)}",
    f"delete {key(*P, low=1)}",
]

# The root grows NODE4 -> NODE16; one node grows 4 -> 16 -> 48 and takes in-place NODE48 adds,
# then shrinks 48 -> 16 -> 4 and merges away.
GROW = (
    [f"insert {key(i)} {i}" for i in range(1, 6)]
    + [f"insert {key(6, low=i)} {100 + i}" for i in range(19)]
    + [f"delete {key(6, low=i)}" for i in (3, 17, 5, 0, 9, 11, 12, 1, 2, 4, 6, 7, 8, 10, 13, 14, 15, 16)]
)

# The shortest history that reaches each seeded bug's code (the correct trees run SPLIT and GROW).
ROOT_GROW = [f"insert {key(i)} {i}" for i in range(1, 7)] + [f"lookup {key(4)}"]
HISTORY_FOR = {"grow-flush-one-line": ROOT_GROW, "grow-no-free": ROOT_GROW, "cow-no-free": ROOT_GROW}


BUGS = [(tree, bug) for tree in TREES for bug in catalog(tree)]


@pytest.mark.parametrize("tree", TREES)
def test_catalog_is_well_formed(tree):
    bugs = catalog(tree)
    assert len(bugs) >= 5
    assert len({b["name"] for b in bugs}) == len(bugs)
    # a tree's sources: its folder plus the shared folders its shared.txt names (trees/art_engine)
    sources = tree_sources(tree)
    assert "art_engine" in shared_folders(tree)
    for b in bugs:
        assert b["class"] in CLASSES, b
        assert set(b.get("other_classes", [])) <= CLASSES, b
        assert f"#ifdef {b['define']}" in sources or f"#ifndef {b['define']}" in sources, b
        assert b["description"].strip()
    expect = json.loads((ROOT / "trees" / tree / "expect.json").read_text())
    funcs = {k["alloc_func"] for k in expect["known"]}
    for f in funcs:
        assert f"\n{f}(" in sources, f"expect.json names {f}, which allocates nothing here"


@pytest.mark.parametrize("history", [SPLIT, GROW], ids=["split-merge", "grow-shrink"])
@pytest.mark.parametrize("tree", TREES)
def test_correct_tree_survives_every_crash_state(trees_built, tmp_path, tree, history):
    findings = crash_findings(ROOT / "build" / "trees" / tree / "driver", tmp_path, history, tree=tree)
    assert [f for f in findings if not f.expected] == []
    # a leak expect.json declares is by design only inside an operation, never once it returned
    assert [f for f in findings if f.between_ops] == []


@pytest.mark.parametrize("tree,bug", BUGS, ids=[f"{t}-{b['name']}" for t, b in BUGS])
def test_seeded_bug_is_caught_with_its_class(trees_built, tmp_path, tree, bug):
    history = HISTORY_FOR.get(bug["name"], SPLIT)
    findings = [f for f in crash_findings(ROOT / "build" / "trees" / tree / f"driver-bug-{bug['name']}", tmp_path,
                                          history, tree=tree, stop_at=bug["class"]) if not f.expected]
    classes = {f.cls for f in findings}
    assert findings, f"{bug['name']}: no crash state shows the bug"
    assert bug["class"] in classes, f"{bug['name']}: found {sorted(classes)}, first {findings[0]}"
