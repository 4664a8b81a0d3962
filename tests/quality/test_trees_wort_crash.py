"""WORT under simulated crashes: the correct tree survives every crash state crashsim chooses in a
history that exercises its failure-atomic steps, and every seeded bug of trees/wort/bugs.json is
caught, with the class the catalog names among the findings.

The crash states, their checks and their verdicts are the project's own (tests/crashutil.py:
crashsim's simulator and bounded strategy, the driver's runner, crashcheck.specs.oracle.judge_recovery with the
ordered map model and its follow-up, and specs/leaks.py with trees/wort/expect.json).
"""
from __future__ import annotations

import pytest

from crashutil import crash_findings
from treeutil import ROOT, catalog, tree_sources

WORT = ROOT / "build" / "trees" / "wort"

# Splits of a compressed path whose first child is an inner node (0x1000/0x1001 below 0x1100,
# then 0x2000 splits the 13-nibble prefix), leaf splits, updates (value objects recycled),
# deletes that merge a node into its parent, and an insert into the merged node.
HISTORY = """\
insert 4096 1
insert 4097 2
insert 4352 3
insert 8192 4
update 4097 20
update 4097 21
insert 4098 5
delete 4352
delete 8192
update 4096 10
insert 12288 6
delete 4097
lookup 4098
insert 4353 7
"""
HISTORY_LINES = [line for line in HISTORY.splitlines() if line.strip()]


def test_catalog_is_well_formed():
    classes = {"lost-durable-write", "torn-update", "resurrected-delete", "wrong-value", "invariant-violation",
               "recovery-crash", "recovery-hang", "leak", "post-recovery-divergence"}
    bugs = catalog("wort")
    assert len(bugs) >= 5
    assert len({b["name"] for b in bugs}) == len(bugs)
    sources = tree_sources("wort")
    for b in bugs:
        assert b["class"] in classes, b
        assert b["define"].startswith("BUG_WORT_"), b
        assert f"#ifdef {b['define']}" in sources or f"#ifndef {b['define']}" in sources, b
        assert b["description"].strip()


def test_correct_wort_survives_every_crash_state(trees_built, tmp_path):
    findings = crash_findings(WORT / "driver", tmp_path, HISTORY_LINES, tree="wort")
    assert [f for f in findings if not f.expected] == []
    # a leak expect.json declares is by design only inside an operation, never once it returned
    assert [f for f in findings if f.between_ops] == []


@pytest.mark.parametrize("bug", catalog("wort"), ids=lambda b: b["name"])
def test_seeded_bug_is_caught_with_its_class(trees_built, tmp_path, bug):
    findings = [f for f in crash_findings(WORT / f"driver-bug-{bug['name']}", tmp_path, HISTORY_LINES, tree="wort",
                                          stop_at=bug["class"]) if not f.expected]
    classes = {f.cls for f in findings}
    assert findings, f"{bug['name']}: no crash state shows the bug"
    assert bug["class"] in classes, f"{bug['name']}: found {sorted(classes)}, first {findings[0]}"
