"""bench/heart/pm_access.py (the Heart paper's PM-access figures): the script builds its load-logging drivers, runs
a small history on Heart and WOART and prints the table, with the figures of Heart's claims."""
from __future__ import annotations

import re
import subprocess
import sys

from treeutil import ROOT

SCRIPT = ROOT / "bench" / "heart" / "pm_access.py"


def test_pm_access_table(instrument_built, tmp_path):
    res = subprocess.run([sys.executable, str(SCRIPT), "--n", "200", "--workdir", str(tmp_path)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = {}
    for line in res.stdout.splitlines():
        m = re.match(r"(\w+: .*?)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+|-)$", line)
        if m:
            rows[m.group(1).strip()] = (float(m.group(2)), float(m.group(3)))
    assert len(rows) == 24, res.stdout
    for name in ("lookup: internal nodes visited", "lookup: XPLines per internal node",
                 "lookup: 64-B lines, all PM loads", "update: bytes written to PM", "update: stores",
                 "insert: bytes written to PM"):
        assert min(rows[name]) > 0, (name, res.stdout)
    # the claims, on this history: Heart writes one 8-byte context in place per update and reads
    # about one XPLine per internal node (more only where a bucket straddles a 256-B boundary)
    assert rows["update:   into existing objects"][0] == 8.0, res.stdout
    assert rows["update: flushes by the tree"][0] == 0.0, res.stdout
    assert 1.0 <= rows["lookup: XPLines per internal node"][0] < 1.2, res.stdout
