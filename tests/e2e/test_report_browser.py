"""The HTML report as a person sees it: a real bug (the example structure's deliberate bug) fuzzed,
written as a results file and a report, opened in headless Chromium (Debian's), and checked for
what must be visible: the bug's class, the lost store's source line, the expected-vs-recovered
diff and the timeline; and a WORT bug whose lost store sits in a static function inlined at -O2,
whose source box must highlight the store's own line (not the call), with the timeline kept
inside the page. The screenshots are kept under out/test-artifacts/.
"""
import json
import os
import re
from pathlib import Path

import pytest
from browser import launch, require_chromium
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("CRASHCHECK_ARTIFACTS", ROOT / "out" / "test-artifacts"))
EXAMPLE = ROOT / "examples" / "pmhash"


cli = run_cli


@pytest.fixture(scope="module")
def bug_report(tmp_path_factory, instrument_built):
    out = tmp_path_factory.mktemp("report")
    # a build folder of its own: the gate (tests/quality) builds pmhash into build/user, and a
    # driver rebuilt under a running fuzz ends it with "changed during the run"
    builds = out / "builds"     # (replay finds it through CRASHCHECK_BUILDS too)
    res = cli("build", "pmhash", str(EXAMPLE / "pmhash.c"), "--adapter", str(EXAMPLE / "adapter.c"),
              "--out", str(builds))
    assert res.returncode == 0, res.stderr
    res = cli("fuzz", "pmhash", "--bug", "link-first", "--examples", "16", "--seed", "1", "--quiet",
              "--json", str(out / "results.json"), "--report", str(out / "report.html"),
              env_extra={"CRASHCHECK_BUILDS": str(builds)})
    assert res.returncode == 1, res.stdout + res.stderr      # bugs found
    return out


def test_results_file_has_the_documented_shape(bug_report):
    res = json.loads((bug_report / "results.json").read_text())
    # the assumptions every verdict rests on (failure-atomic unit, persistency model)
    assert res["assumptions"]["model"] == "adr" and res["assumptions"]["atomic_unit"] == 8
    assert "failure-atomic unit 8 bytes" in res["assumptions"]["text"]
    # one root cause, one bug (point 2): the deliberate bug is one unexpected bug
    assert [b["class"] for b in res["bugs"] if not b["expected"]] == ["invariant-violation"]
    # paths for people on other machines (point 7): relative to the project root
    text = json.dumps(res["bugs"])
    assert str(ROOT) not in text
    for b in res["bugs"]:
        assert b["assumptions"]["atomic_unit"] == 8
        for s in b["lost"] + b["persisted"]:
            assert s["site"]["file"] == "examples/pmhash/pmhash.c" or s["site"]["file"].startswith("trees/"), s
        assert all(not key.startswith("/") for key in b["sources"]), list(b["sources"])
    assert set(res["stats"]) >= {"histories", "crash_points", "states_legal", "states_explored", "elapsed_s"}
    assert res["stats"]["histories"] >= 16 and res["stats"]["states_explored"] > 0
    bugs = [b for b in res["bugs"] if not b["expected"]]
    inv = [b for b in bugs if b["class"] == "invariant-violation"]
    assert inv, [b["class"] for b in bugs]
    b = inv[0]
    assert b["history"] == ["insert 1 1"] or len(b["history"]) <= 2     # shrunk
    assert b["replay"].startswith("crashcheck replay ") and Path(b["replay"].split()[-1]).exists()
    assert any(s["site"]["file"].endswith("pmhash.c") for s in b["lost"] + b["persisted"] if s["site"])
    # known-by-design leak is reported, marked expected
    assert any(x["expected"] and x["class"] == "leak" for x in res["bugs"])
    # the record replays
    rep = run_cli("replay", b["replay"].split()[-1], env_extra={"CRASHCHECK_BUILDS": str(bug_report / "builds")})
    assert rep.returncode == 1 and "reproduced: invariant-violation" in rep.stdout, rep.stdout + rep.stderr


def test_report_is_self_contained(bug_report):
    html = (bug_report / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)
    assert "<script" not in html and "<link" not in html


def test_report_in_chromium(bug_report):
    require_chromium()
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto((bug_report / "report.html").as_uri())
            section = page.locator("section.bug:not(.expected)").filter(has_text="invariant-violation").first
            assert section.is_visible()
            badge = section.locator(".badge").first
            assert badge.inner_text() == "invariant-violation" and badge.is_visible()
            # the source line of the lost key store, or of the crash right after the too early
            # persist of the bucket head (the call in pmhash.c, not the fence inside the
            # inlined persist.h helper), highlighted in the bug's section
            hit = section.locator("pre.src span.hit").filter(
                has_text=re.compile(r"n->key = key|persistent\(head, sizeof\(\*head\)\)")).first
            hit.scroll_into_view_if_needed()
            assert hit.is_visible()
            # the expected-vs-recovered diff shows the extra (never inserted) key
            diff = section.locator("tr.extra").first
            diff.scroll_into_view_if_needed()
            assert diff.is_visible() and "extra" in diff.inner_text()
            svg = section.locator("svg.timeline")
            svg.scroll_into_view_if_needed()
            assert svg.is_visible() and svg.locator("line.crash").count() == 1
            box = svg.bounding_box()
            assert box and box["width"] > 100 and box["height"] > 50
            page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=True)
        finally:
            browser.close()
    assert (ARTIFACTS / "report.png").stat().st_size > 10_000


@pytest.fixture(scope="module")
def inlined_report(tmp_path_factory, instrument_built):
    """WORT's split header: its lost store is in write_split_header, a static function inlined
    into split_prefix and wort_insert at -O2."""
    out = tmp_path_factory.mktemp("inlined")
    res = cli("fuzz", "wort", "--bug", "split-header-two-stores", "--examples", "48", "--seed", "1",
              "--stop-on", "invariant-violation", "--quiet",
              "--json", str(out / "results.json"), "--report", str(out / "report.html"))
    assert res.returncode == 1, res.stdout + res.stderr
    return out


def test_inlined_store_shows_its_own_line(inlined_report):
    """The record names the store's own line in write_split_header, inlined into another function
    of wort.c; the report's box highlights that line, the inlining under it, and the timeline of
    the operation in flight stays inside the page (a long one scrolls in its own box)."""
    res = json.loads((inlined_report / "results.json").read_text())
    [bug] = [b for b in res["bugs"] if not b["expected"]]
    assert bug["class"] == "invariant-violation"
    src = (ROOT / "trees" / "wort" / "wort.c").read_text().splitlines()
    lost = [s["site"] for s in bug["lost"] if s["site"]]
    assert lost, bug["lost"]
    for site in lost:
        assert site["line"] > 0 and not site["file"].startswith("/")
        text = src[site["line"] - 1] if site["file"] == "trees/wort/wort.c" else \
            src[site["inlined_at"]["line"] - 1]
        assert "n->hdr" in text, (site, text)           # the store, in write_split_header
    require_chromium()
    from playwright.sync_api import sync_playwright
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = launch(p)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 900})
            page.goto((inlined_report / "report.html").as_uri())
            section = page.locator("section.bug:not(.expected)").first
            table = section.locator("h3", has_text="Stores lost at the crash")
            table.scroll_into_view_if_needed()
            # the first source box after the lost-store table: its highlighted line is the store's
            hit = section.locator("h3:has-text('Stores lost at the crash') ~ pre.src span.hit").first
            hit.scroll_into_view_if_needed()
            assert hit.is_visible()
            assert "n->hdr" in hit.inner_text() and "write_split_header(" not in hit.inner_text(), hit.inner_text()
            chain = section.locator("h3:has-text('Stores lost at the crash') ~ .chain").first
            # a version-4 trace shows each call of the inline chain ("inlined at FILE:LINE in F"),
            # an older one the function it was inlined into
            assert chain.count() == 0 or re.search(r"inlined (at \S+:\d+ in |into )", chain.inner_text())
            box = section.locator(".timelinebox").first
            box.scroll_into_view_if_needed()
            rect = box.bounding_box()
            width = page.evaluate("document.documentElement.clientWidth")
            assert rect and rect["x"] >= 0 and rect["x"] + rect["width"] <= width, (rect, width)
            sizes = box.evaluate("b => [b.scrollWidth, b.clientWidth, b.firstElementChild.getBoundingClientRect().width]")
            assert sizes[2] <= sizes[1] or sizes[0] > sizes[1], sizes      # fits, or scrolls inside
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            page.screenshot(path=str(ARTIFACTS / "report-inlined.png"), full_page=True)
        finally:
            browser.close()
