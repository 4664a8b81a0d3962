"""`crashcheck fuzz --perf` on a correct structure (WORT): its redundant flushes and idle fences
are listed per site and per operation in the results file, the summary and the report, and are
never a bug: the run exits 0."""
import json

from cli_run import run_cli


def test_fuzz_perf_on_a_correct_structure(tmp_path, instrument_built):
    res = run_cli("fuzz", "wort", "--examples", "4", "--seed", "1", "--perf", "--quiet",
                  "--json", str(tmp_path / "r.json"), "--report", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stdout + res.stderr
    line = next(x for x in res.stdout.splitlines() if x.strip().startswith("perf: "))
    assert "repeated flushes" in line and "(not bugs)" in line
    data = json.loads((tmp_path / "r.json").read_text())
    perf = data["per_structure"][0]["perf"]
    assert not [b for b in data["bugs"] if not b["expected"]]
    assert perf["histories"] >= 4 and perf["totals"]["flushes"] > 0
    # WORT flushes a leaf's line again before its fence (wort.c), and fences with nothing pending
    assert perf["totals"]["flush-repeated"] > 0 and perf["totals"]["fence-idle"] > 0
    assert any(s["where"].startswith("trees/wort/") for s in perf["sites"])
    assert perf["by_operation"]["insert"]["ops"] > 0 and perf["by_operation"]["insert"]["per_op"]["flushes"] > 0
    html = (tmp_path / "r.html").read_text()
    assert "Useless persistence: wort" in html
