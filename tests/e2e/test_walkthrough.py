"""docs/walkthrough.md, run: examples/minikv (malloc'd nodes, its own flush macros) built with
--pm-malloc, fuzzed clean with its by-design leak expected, and its seeded lost update found and
shown in the report down to the store's line, replayable. The commands are the page's own."""
import json
from pathlib import Path

from cli_run import run_cli
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "minikv"
DOC = (ROOT / "docs" / "walkthrough.md").read_text()
BUILD_ARGS = (EXAMPLE / "minikv.c", "--adapter", EXAMPLE / "adapter.c", "--pm-malloc")
_LINES = (EXAMPLE / "minikv.c").read_text().splitlines()
_UPDATE = next(i for i, line in enumerate(_LINES) if line.startswith("int minikv_update("))
# the store of the new value in minikv_update (the one update-no-flush never persists)
STORE_LINE = next(i for i, line in enumerate(_LINES, 1) if i > _UPDATE and "n->value = value;" in line)


def test_the_page_shows_the_commands_this_test_runs():
    assert ("crashcheck build minikv examples/minikv/minikv.c --adapter examples/minikv/adapter.c "
            "--pm-malloc") in DOC
    assert "crashcheck fuzz minikv --examples 16" in DOC
    assert "crashcheck fuzz minikv --bug update-no-flush --examples 16" in DOC
    assert f"minikv.c:{STORE_LINE}" in DOC


def test_first_fuzz_passes_with_the_expected_leak(instrument_built, tmp_path):
    build_once("minikv", *BUILD_ARGS)
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    res = run_cli("fuzz", "minikv", "--examples", "16", "--quiet", "--json", out, "--report", report)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    assert data["stats"]["histories"] >= 16 and data["stats"]["crash_points"] > 0
    assert [b["class"] for b in data["bugs"]] == ["leak"] and data["bugs"][0]["expected"]
    assert "posix_memalign" in data["bugs"][0]["expected_reason"]
    assert "known by design" in report.read_text()


def test_lost_update_is_found_shown_and_replayed(instrument_built, tmp_path):
    build_once("minikv", *BUILD_ARGS)
    out, report = tmp_path / "r.json", tmp_path / "r.html"
    res = run_cli("fuzz", "minikv", "--bug", "update-no-flush", "--examples", "16", "--quiet",
                  "--stop-on", "lost-durable-write", "--json", out, "--report", report)
    assert res.returncode == 1, res.stdout + res.stderr
    bug = next(b for b in json.loads(out.read_text())["bugs"] if not b["expected"])
    assert bug["class"] == "lost-durable-write"
    assert bug["history"][-1].startswith("update ")
    lost = [s["site"] for s in bug["lost"] if s.get("site")]
    assert any(Path(s["file"]).name == "minikv.c" and s["line"] == STORE_LINE for s in lost), lost
    html = report.read_text()
    assert "n-&gt;value = value;" in html or "n->value = value;" in html
    records = sorted((tmp_path / "r.bugs").glob("minikv-update-no-flush-lost-durable-write-*.json"))
    assert records
    assert run_cli("replay", records[0]).returncode == 1
