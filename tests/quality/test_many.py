"""Many bugs at once (issue 48): each many-bug variant of the catalog (an entry naming "bugs",
docs/trees.md "Many bugs at once") fuzzed whole, and every seeded bug in it must come out as a
bug record of its own, named by its own site: the record is told to be a seeded bug's by the
bug's catalog signature (harness/triage/seeded_match.py), the sites its own variant's records
name. A bug that came out only as a symptom of another bug's record, or not at all, fails.

One structure runs in CI (minikv: a lost update and a leak, two causes the grouping once folded into
one record); the others are slow (a 120 s run each, issue 48's budget). Their signatures were
derived by scripts/seeded-signatures from runs of the single-bug variants.
"""
import json
from pathlib import Path

import pytest
from cli_run import run_cli
from userbuild import build_once

from crashcheck.harness.target import structures
from crashcheck.harness.triage import seeded_match

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
TREES = [p.parent.name for p in sorted((ROOT / "trees").glob("*/bugs.json"))
         if structures.read_bugs(p) and any(b.many for b in structures.read_bugs(p))]
# how each example with a many-bug variant is built (examples/builds.json, which bench/detection/run
# --many reads too; docs/trees.md "A user's structure")
EXAMPLE_BUILDS = {name: [*(EXAMPLES / name / f for f in how["sources"]), "--adapter", EXAMPLES / name / how["adapter"],
                         *how["flags"]]
                  for name, how in json.loads((EXAMPLES / "builds.json").read_text()).items() if name != "about"}
FAST = "minikv"
BUDGET = 120.0        # seconds per slow run: issue 48's budget
FAST_BUDGET = 20.0


def _catalog(name: str) -> list:
    folder = ROOT / "trees" / name if name in TREES else EXAMPLES / name
    return structures.read_bugs(folder / "bugs.json")


def test_every_structure_with_two_seeded_bugs_has_a_many_variant():
    """Every built-in structure and example whose catalog has two or more single-threaded seeded
    bugs has a `many` variant, and each bug it names has a signature (the gate below needs it).
    (Bugs that need threads are left out: a many-bug variant is fuzzed single-threaded, as the
    catalogs' many entries say, and examples/lfhash's three are persistency races only.)"""
    folders = sorted((ROOT / "trees").glob("*/bugs.json")) + sorted(EXAMPLES.glob("*/bugs.json"))
    for path in folders:
        bugs = structures.read_bugs(path)
        singles = [b for b in bugs if not b.many and b.threads == 1]
        many = [b for b in bugs if b.many]
        if len(singles) < 2:
            assert not many, path
            continue
        assert [v.name for v in many] == ["many"], path
        assert len(many[0].parts) >= 2, path
        for part in many[0].parts:
            bug = next(b for b in singles if b.name == part)
            assert bug.signature, f"{path}: {part} has no signature (scripts/seeded-signatures --write)"
    assert set(EXAMPLE_BUILDS) == {p.parent.name for p in EXAMPLES.glob("*/bugs.json")
                                   if any(b.many for b in structures.read_bugs(p))}


def test_list_and_fuzz_know_the_many_variants(trees_made, tmp_path):
    """`crashcheck list` shows each many-bug variant with the bugs it builds in (apart from the
    seeded bugs, whose classes stay real classes), and `fuzz --bug many` runs its driver."""
    rows = {r["name"]: r for r in json.loads(run_cli("list", "--json").stdout)}
    wort = [b.name for b in _catalog("wort") if not b.many]
    assert [(v["name"], v["threads"]) for v in rows["wort"]["many"]] == [("many", 1)]
    assert set(rows["wort"]["many"][0]["bugs"]) < set(wort)
    assert [b["name"] for b in rows["wort"]["bugs"]] == wort
    assert all(r["many"] for name, r in rows.items() if name in TREES)
    text = run_cli("list").stdout
    assert "    --bug many                         many                       5 seeded bugs at once: no-flush-link, " in text
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "wort", "--bug", "many", "--examples", "1", "--quiet", "--no-fix", "--json", out, timeout=300)
    assert res.returncode in (0, 1), res.stderr
    data = json.loads(out.read_text())
    assert data["per_structure"][0]["bug"] == "many" and data["per_structure"][0]["stats"]["histories"] > 0
    res = run_cli("fuzz", "wort", "--bug", "mny", "--examples", "1")
    assert res.returncode == 2 and "known: no-flush-link" in res.stderr and res.stderr.rstrip().endswith(", many")


def _params():
    out = []
    for name in TREES + sorted(EXAMPLE_BUILDS):
        out.append(pytest.param(name, id=name, marks=[] if name == FAST else [pytest.mark.slow]))
    return out


@pytest.fixture(scope="module")
def trees_made(instrument_built):
    import subprocess
    res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return True


@pytest.mark.parametrize("name", _params())
def test_each_seeded_bug_is_a_record_of_its_own(trees_made, crashcheck, name):
    if name in EXAMPLE_BUILDS:
        build_once(name, *EXAMPLE_BUILDS[name])
    [variant] = [b for b in _catalog(name) if b.many]
    parts = [b for b in _catalog(name) if b.name in variant.parts]
    result = crashcheck.run(name, bug=variant.name, seed=1, budget=FAST_BUDGET if name == FAST else BUDGET,
                            examples=None)
    verdicts = seeded_match.classify(result.results["bugs"], parts)
    wrong = {b: (v.how, v.record) for b, v in verdicts.items() if v.how != seeded_match.OWN}
    got = [(r["class"], r["group"]) for r in result.unexpected]
    assert not wrong, f"{name} --bug {variant.name}: not a record of their own: {wrong}; records: {got} ({result.report})"
    # and each one's record is a different one, of a class its catalog entry names
    assert len({v.record for v in verdicts.values()}) == len(parts)
    by_id = {r["id"]: r for r in result.unexpected}
    for b in parts:
        rec = by_id[verdicts[b.name].record]
        assert rec["class"] in (b.cls, *b.other_classes), (b.name, rec["class"], rec["group"])
