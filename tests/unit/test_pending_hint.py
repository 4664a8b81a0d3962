"""The "pending lines" hint (issue 34): when a crash point's legal-state count explodes, say which
allocation site's objects hold most of the lines stored and never flushed (harness/check/pending.py),
and a fuzz run says it once among its target's warnings."""
from __future__ import annotations

from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.check import pending
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.run.config import Config
from crashcheck.harness.run.plan import fuzz_target
from crashcheck.harness.run.search import PENDING


def _point(tmp_path, dirty_lines: int):
    w = TraceWriter(pool_size=1 << 16)
    buf, node = w.site("cache.cc", 40, "fill"), w.site("map.hpp", 12, "insert")
    w.op_begin(0)
    w.alloc(0x1000, 64 * dirty_lines, site=buf)      # a buffer nothing flushes
    for i in range(dirty_lines):
        w.store(0x1000 + 64 * i, b"\x01" * 8)
    w.alloc(0x8000, 64, site=node)                   # a node, stored and persisted...
    w.store(0x8000, b"\x02" * 8)
    w.persist(0x8000, 8)
    w.store(0x8008, b"\x03" * 8)                     # ...then one more store left pending
    w.fence()
    w.op_end(0)
    trace = read_trace(w.write(tmp_path / "t.trace"))
    # the crash point at the last fence, with every pending line
    point = [p for p in Simulator.from_trace(trace).crash_points() if p.kind == "fence"][-1]
    return trace, point


def test_the_site_holding_most_pending_lines_is_named(tmp_path):
    trace, point = _point(tmp_path, 60)
    total, by_site = pending.pending_sites(trace, point)
    assert total == 61
    assert by_site["cache.cc:40 in fill"] == 60 and by_site["map.hpp:12 in insert"] == 1
    hint = pending.pending_hint(trace, point, "`insert 1 2`")
    assert point.legal == 2 ** 61
    assert "61 cache lines stored and never flushed; 60 of them in objects allocated at cache.cc:40 in fill" in hint
    assert "`insert 1 2`" in hint and "2.31e18 legal crash states" in hint


def test_no_hint_below_the_explosion(tmp_path):
    trace, point = _point(tmp_path, 8)
    assert point.legal == 2 ** 9 and pending.pending_hint(trace, point) is None


def test_a_fuzz_run_says_it_once_among_the_warnings(trees_built, tmp_path, monkeypatch):
    """(With the threshold lowered, WORT's own pending lines at a crash point are enough.)"""
    monkeypatch.setattr(pending, "EXPLODES", 2)
    monkeypatch.chdir(tmp_path)
    res = fuzz_target("wort", None, Settings(seed=1), Config(examples=4, budget=None))
    hints = [w for w in res.warnings if w.startswith(PENDING)]
    assert len(hints) == 1 and "wort.c:" in hints[0] and "legal crash states at one crash point" in hints[0]
