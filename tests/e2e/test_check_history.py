"""`crashcheck check STRUCTURE --history ...` (docs/cli.md `check`): a history the user wrote is
crash-checked as fuzz checks its own, with fuzz's records, results and exit statuses; bad input
is one line and exit 2; the pytest plugin's `check_history` does the same in a test."""
from __future__ import annotations

import json
import subprocess

import pytest
from cli_run import ROOT, run_cli

pytest_plugins = ["pytester"]


@pytest.fixture(scope="module")
def built():
    res = subprocess.run(["make", "-s", "trees"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def test_a_seeded_bug_is_found_by_the_history_given_and_its_record_replays(built, tmp_path):
    out = tmp_path / "r.json"
    res = run_cli("check", "wort", "--bug", "no-flush-link", "--history", "insert 1 2", "--json", out,
                  "--report", tmp_path / "r.html", "--quiet")
    assert res.returncode == 1, res.stdout + res.stderr
    assert "lost-durable-write" in res.stdout and "history: insert 1 2" in res.stdout
    results = json.loads(out.read_text())
    [row] = results["per_structure"]
    # (a failing history is checked a second time, as fuzz does, to tell a nondeterministic structure)
    assert row["stats"]["histories"] == 2 and row["unexpected"] >= 1
    assert all(b["history"] == ["insert 1 2"] for b in results["bugs"])     # exactly that history
    assert (tmp_path / "r.html").is_file()
    [record] = [b for b in results["bugs"] if b["class"] == "lost-durable-write"]
    again = run_cli("replay", tmp_path / "r.bugs" / f"{record['id']}.json")
    assert again.returncode == 1 and "reproduced" in again.stdout, again.stdout + again.stderr


def test_a_correct_structure_passes_a_file_with_a_load(built, tmp_path):
    hist = tmp_path / "h.txt"
    hist.write_text("# set-up, then the operations checked\ninsert 1 2\ninsert 2 3\n\ndelete 1; lookup 2\n")
    res = run_cli("check", "wort", "--history", hist, "--load", "2", "--json", tmp_path / "r.json", "--quiet")
    assert res.returncode == 0, res.stdout + res.stderr
    stats = json.loads((tmp_path / "r.json").read_text())["per_structure"][0]["stats"]
    assert stats["histories"] == 1 and stats["crash_points"] > 0


@pytest.mark.parametrize("args, needle", [
    (("wort", "--history", "frobnicate 1 2"), "unknown operation 'frobnicate'"),
    (("wort", "--history", "insert 1"), "too few fields"),
    (("wort", "--history", "delete 1 2"), "3 fields, 2 wanted"),
    (("wort", "--history", "insert one 2"), "bad history line 0 'insert one 2'"),
    (("wort", "--history", "no-such-file.txt"), "no-such-file.txt: no such history file"),
    (("wort", "--history", "insert 1 2", "--load", "1"), "--load 1: the history has 1 operations"),
    (("wort", "--history", " ; # nothing"), "the history has no operation"),
    (("nosuchtree", "--history", "insert 1 2"), "unknown structure 'nosuchtree'"),
    (("wort", "--bug", "chain-head-first", "--history", "insert 1 2"), "has no seeded bug 'chain-head-first'"),
])
def test_bad_input_is_one_line_and_exit_2(built, args, needle):
    res = run_cli("check", *args, "--quiet")
    assert res.returncode == 2, res.stdout + res.stderr
    assert needle in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "Traceback" not in res.stderr


def test_the_plugin_checks_a_history_and_fails_on_the_bug(built, pytester):
    pytester.makepyfile("""
        def test_fixed(crashcheck):
            crashcheck.check_history("insert 1 2; delete 1", "wort")

        def test_regression(crashcheck):
            crashcheck.check_history(["insert 1 2"], "wort", bug="no-flush-link")

        def test_bad_line(crashcheck):
            crashcheck.check_history("insert 1", "wort")
    """)
    res = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    res.assert_outcomes(passed=1, failed=2)
    res.stdout.fnmatch_lines(["*unexpected bug(s) in wort*", "*lost-durable-write*", "*history: insert 1 2*",
                              "*crashcheck gate:*too few fields*"])


def test_a_failure_that_lost_nothing_is_no_symptom_of_a_bug_it_only_hinges_with(built, tmp_path):
    """Heart with its seeded bugs at once (issue 48): a crash right after the split's CAS
    (heart.c:410) loses nothing under eADR and lacks the old child's slot (heart.c:137, the split
    published before its parent is filled). The leaf published before its key hinges on that CAS
    too, with no fix proven, but loses the leaf's key: the split's failure is no symptom of the
    leaf's record; it is one of the split's own, whose state loses a slot of the same parent."""
    from crashcheck.harness.target import structures
    from crashcheck.harness.triage import seeded_match

    out = tmp_path / "r.json"
    res = run_cli("check", "heart", "--bug", "many", "--history", "insert x:00 1; insert x:005b 1", "--json", out,
                  "--quiet", timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    records = json.loads(out.read_text())["bugs"]
    catalog = {b.name: b for b in structures.read_bugs(ROOT / "trees" / "heart" / "bugs.json")}
    split, leaf = catalog["split-publish-early"], catalog["leaf-publish-early"]
    verdicts = seeded_match.classify(records, [split, leaf])
    assert verdicts[split.name].how == verdicts[leaf.name].how == seeded_match.OWN, verdicts
    def at_cas(r):
        return [s for s in r["symptoms"] if s["group"].endswith("crash@trees/heart/heart.c:410")]
    by_id = {r["id"]: r for r in records}
    assert verdicts[split.name].record != verdicts[leaf.name].record
    assert at_cas(by_id[verdicts[split.name].record]) and not at_cas(by_id[verdicts[leaf.name].record])
