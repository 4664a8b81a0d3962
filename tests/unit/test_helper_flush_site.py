"""A persist helper in a file of its own (tests/fixtures/pflush: pflush.c, called from main.c)
cannot be inlined: its flushes and fences are named at main.c's line that called it, so `--perf`
(harness/check/perf_tally.py) attributes a redundant flush to the caller's line, as
docs/cli.md promises, never to the helper's own `pflush.c` line (issue 49 point 9)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

from corpus import corpuslib
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.check.perf_tally import PerfTally

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "pflush"


def _line(tag: str) -> int:
    text = (FIXTURE / "main.c").read_text().splitlines()
    return next(i for i, t in enumerate(text, 1) if re.search(rf"/\* @{tag}\b", t))


def test_a_helper_in_another_file_is_named_at_the_callers_line(instrument_built, tmp_path: Path):
    exe = tmp_path / "main"
    subprocess.run([str(corpuslib.CC), "-O2", "-I", str(corpuslib.CORPUS), str(FIXTURE / "main.c"),
                    str(FIXTURE / "pflush.c"), "-o", str(exe)], check=True, capture_output=True, timeout=120)
    res, tr = corpuslib.run(exe, tmp_path / "run")
    assert res.returncode == 0, res.stderr
    trace = read_trace(tr)
    persist = [trace.site(ev.site) for ev in trace.events if ev.kind in ("flush", "fence")]
    assert len(persist) == 6
    lines = [_line("first")] * 2 + [_line("second")] * 2 + [_line("again")] * 2
    assert [(s.file.endswith("pflush/main.c"), s.line, s.func) for s in persist] == \
        [(True, n, "main") for n in lines]
    assert all(s.chain == ("pflush()",) and s.describe().endswith(" via pflush()") for s in persist)
    tally = PerfTally.of(trace, [])
    [clean] = [(kind, where) for (kind, _, where, _), n in tally.sites.items() if kind == "flush-clean-line"]
    assert clean[1].endswith(f"pflush/main.c:{_line('again')}")
    assert not any("pflush.c" in where for (_, _, where, _) in tally.sites)
