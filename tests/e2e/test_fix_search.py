"""An ordering bug's fix, searched on its trace and proven there (harness/check/fix_search.py).

ARTcow's seeded bug value-no-flush never flushes a new value object, so an update's pointer swing
can reach PM before the value: a fix is found on the trace (a flush and a fence after the value's
store), proven by checking every crash state of the history again, and proven on a second history
too; the cheaper candidate, a flush alone (a fence follows only after the swing), is rejected
because a state still fails. A logic error (HEART's 7-bit key byte, wrong without any crash) gets
no fix. The record carries it, and the summary and the report show it (the report in Chromium is
in the slow test below)."""
import json
import re
from pathlib import Path

import pytest

from browser import launch, require_chromium
from cli_run import run_cli
from crashcheck.harness.check.fix_search import Edit, passes, search_fix
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.render.report import load_results, render
from crashcheck.harness.target import structures
from crashcheck.harness.triage.fix_record import fix_line
from crashcheck.harness.triage.records import build_record
from crashcheck.specs import registry
from crashcheck.specs.model import with_load

ROOT = Path(__file__).resolve().parents[2]
MAP = registry.get("ordered_map")
STORE = "trees/art_engine/art_nodes.c:212"          # memcpy(v->bytes, ...) in art_value_alloc


def _report(rec, tmp_path):
    """The HTML report of a results file around one record, read back as `crashcheck report` does
    (which checks the record's format, its `fix` too)."""
    stats = {"histories": 1, "crash_points": 1, "states_legal": 1, "states_explored": 1, "elapsed_s": 1.0}
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"crashcheck": 1, "model": "adr", "strategy": "lazy", "seed": 1, "limit": 64,
                                "command": "", "stats": stats, "bugs": [rec]}))
    return render(load_results(path))


def _ops(*texts, load=1):
    return with_load([MAP.parse_op(x) for x in texts], load)


def _finding(checker, ops, cls):
    out = checker.check(ops)
    [f] = [f for f in out.findings if f.cls == cls]
    checker.finalize(out, f)
    return out, f


def test_fix_found_proven_and_a_wrong_candidate_rejected(tmp_path):
    with Checker(structures.get("artcow"), "value-no-flush", Settings(recovery_crashes=0)) as checker:
        out, f = _finding(checker, _ops("insert 1 10", "insert 2 20", "update 1 11"), "wrong-value")
        fix = f.fix
        assert fix is not None and fix.found, fix
        assert [(e.kind, e.anchor.split("/work/")[-1][-len(STORE):]) for e in fix.edits] == [("persist-after", STORE)]
        # the flush alone came first (one instruction) and a state still failed with it
        assert fix.tried >= 2 and fix.rejected[0].startswith(f"add a flush of the stored line after ")
        assert "expected" in fix.rejected[0]
        anchor = fix.edits[0].anchor
        oracle = checker.oracle(out.ops, out.trace, checker.trace(out.ops)[1], out.followup)
        ok, complete, why = passes(checker.session, out.trace, oracle, (Edit("flush-after", anchor),))
        assert not ok and why
        assert passes(checker.session, out.trace, oracle, fix.edits)[:2] == (True, True)
        # the same edit on another failing history of the bug: proven there too
        assert checker.prove_fix(_ops("insert 5 50", "insert 7 70", "update 7 71"), fix.edits) is True
        # and the record says it
        rec = build_record(structure="artcow", bug="value-no-flush", settings=checker.settings, outcome=out,
                           finding=f, ident="artcow-value-no-flush-wrong-value-1", bugdir=Path("bugs"))
    got = rec["fix"]
    assert got["found"] and got["file"] == STORE.split(":")[0] and got["line"] == 212 and got["where"] == "after"
    assert got["statement"] == "_mm_clwb(v->bytes); _mm_sfence();"
    assert got["proven_for"] == [["insert 1 10", "insert 2 20", "update 1 11"]] and got["complete"]
    assert any("memcpy(v->bytes" in text for _, text in got["edits"][0]["lines"])
    assert fix_line(got).startswith(f"fix: add a flush and a fence after {STORE}: `_mm_clwb(v->bytes); _mm_sfence();`")
    # the report's source box holds the suggestion right after the store's line
    html = _report(rec, tmp_path)
    box = re.search(r'<pre class="src fix">(.*?)</pre>', html, re.S).group(1)
    rows = re.findall(r'<span class="([^"]*)"[^>]*>(.*?)</span>', box)
    at = next(i for i, (cls, text) in enumerate(rows) if cls == "hit")
    assert "memcpy(v-&gt;bytes" in rows[at][1] and rows[at + 1][0] == "suggest"
    assert "_mm_clwb(v-&gt;bytes); _mm_sfence();" in rows[at + 1][1] and "suggested fix" in rows[at + 1][1]


def test_no_fix_is_searched_when_the_run_says_so():
    """`fuzz --no-fix` and the gate's fix=False: the same ordering finding, no search."""
    with Checker(structures.get("artcow"), "value-no-flush", Settings(recovery_crashes=0, fixes=False)) as checker:
        _, f = _finding(checker, _ops("insert 1 10", "insert 2 20", "update 1 11"), "wrong-value")
        assert f.point is not None and f.lost and f.fix is None


def test_a_logic_error_gets_no_fix(tmp_path):
    with Checker(structures.get("heart"), "pack-keybyte-7bit", Settings(recovery_crashes=0)) as checker:
        out, f = _finding(checker, _ops("insert 1 10", "insert 128 20", "insert 129 1", "lookup 128", load=0),
                          "wrong-value")
        assert f.point is None and f.fix is None
        # asked directly, the search declines it: no crash state, nothing about ordering
        assert search_fix(checker.session, out.trace, checker.oracle(out.ops, out.trace, [], out.followup), f) is None
        rec = build_record(structure="heart", bug="pack-keybyte-7bit", settings=checker.settings, outcome=out,
                           finding=f, ident="x", bugdir=Path("bugs"))
    assert rec["fix"] is None and fix_line(rec["fix"]) == ""
    assert "Suggested fix" not in _report(rec, tmp_path)


@pytest.mark.slow
def test_fuzz_summary_and_report_show_the_fix(tmp_path, instrument_built):
    res = run_cli("fuzz", "artcow", "--bug", "value-no-flush", "--examples", "24", "--seed", "1",
                  "--stop-on", "wrong-value", "--json", str(tmp_path / "r.json"),
                  "--report", str(tmp_path / "report.html"))
    assert res.returncode == 1, res.stdout + res.stderr
    assert f"fix: add a flush and a fence after {STORE}" in res.stdout, res.stdout
    [bug] = [b for b in json.loads((tmp_path / "r.json").read_text())["bugs"] if b["class"] == "wrong-value"]
    assert bug["fix"]["found"] and len(bug["fix"]["proven_for"]) >= 1
    require_chromium()
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 900})
            page.goto((tmp_path / "report.html").as_uri())
            section = page.locator("section.bug:not(.expected)").filter(has_text="wrong-value").first
            head = section.locator("h3.fix")
            head.scroll_into_view_if_needed()
            assert head.is_visible() and head.inner_text() == "Suggested fix"
            suggest = section.locator("pre.src.fix span.suggest").first
            suggest.scroll_into_view_if_needed()
            assert suggest.is_visible() and "_mm_clwb(v->bytes); _mm_sfence();" in suggest.inner_text()
            assert "suggested fix" in suggest.inner_text()
            # right under the store's own line, highlighted
            above = section.locator("pre.src.fix span.hit + span.suggest")
            assert above.count() >= 1
        finally:
            browser.close()
