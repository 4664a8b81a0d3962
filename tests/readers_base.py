"""The real files hostile-input tests start from: a small trace of the traced WORT driver, and a
results file with its bug records from a short `crashcheck fuzz` of a seeded bug. Made once per
session (tests/e2e/test_hostile_inputs.py and tests/e2e/test_reader_fuzz.py share them)."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from cli_run import ROOT, run_cli
from hostile import Base

HISTORY = "insert 1 1\ninsert 2 2\ninsert 300 3\nupdate 1 4\ndelete 2\nlookup 1\nscan 0 4\n"


def make_base(work: Path) -> Base:
    work.mkdir(parents=True, exist_ok=True)
    driver = ROOT / "build" / "trees" / "wort" / "driver"
    assert driver.exists(), "run scripts/setup (make trees) first"
    trace = work / "wort.trace"
    hist = work / "history"
    hist.write_text(HISTORY)
    res = subprocess.run([str(driver), "run", "--pool", str(work / "pool"), "--create", "--size", "1m", str(hist)],
                         env=dict(os.environ, CRASHCHECK_TRACE=str(trace)), capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stderr
    results = work / "results.json"
    res = run_cli("fuzz", "wort", "--bug", "no-flush-link", "--examples", "4", "--seed", "1",
                  "--json", results, timeout=600)
    assert res.returncode == 1, res.stderr        # bugs found
    bugs = json.loads(results.read_text())["bugs"]
    # a crash inside an operation with pending stores, whose class replays directly
    rec = next(b for b in bugs if b["class"] == "lost-durable-write" and b["crash"]["choice"])
    return Base(trace, work / "results.bugs" / f"{rec['id']}.json", results)
