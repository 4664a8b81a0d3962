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
    total, by_site, zeroed = pending.pending_sites(trace, point)
    assert total == 61
    assert by_site["cache.cc:40 in fill"] == 60 and by_site["map.hpp:12 in insert"] == 1
    hint = pending.pending_hint(trace, point, "`insert 1 2`")
    assert point.legal == 2 ** 61
    assert "61 cache lines stored and never flushed; 60 of them in objects allocated at cache.cc:40 in fill" in hint
    assert "`insert 1 2`" in hint and "2.31e18 legal crash states" in hint
    assert not zeroed["cache.cc:40 in fill"]
    assert "data the code stores there and never flushes" in hint and "belongs in DRAM" in hint


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


def _buffer(tmp_path, data: bytes, flush: bool, file: str = "cache.cc"):
    """60 lines of one allocated buffer stored with DATA, flushed or not, then one fence."""
    w = TraceWriter(pool_size=1 << 16)
    buf = w.site(file, 40, "fill")
    w.op_begin(0)
    w.alloc(0x1000, 64 * 60, site=buf)
    for i in range(60):
        w.store(0x1000 + 64 * i, data)
        if flush:
            w.flush(0x1000 + 64 * i)
    w.fence()
    w.op_end(0)
    trace = read_trace(w.write(tmp_path / "t.trace"))
    point = [p for p in Simulator.from_trace(trace).crash_points() if p.kind == "fence"][-1]
    return trace, point


def test_zeroes_nothing_flushed_are_called_an_allocators_zeroing(tmp_path):
    # issue 49 point 8: not "belong in DRAM" for objects an allocator zeroed and never flushed
    trace, point = _buffer(tmp_path, bytes(8), flush=False)
    hint = pending.pending_hint(trace, point)
    assert "60 of them in objects allocated at cache.cc:40 in fill, holding only zeroes" in hint
    assert "an allocator's zeroing" in hint and "pmemobj_zalloc" in hint and "DRAM" not in hint


def test_lines_flushed_and_waiting_for_their_fence_get_no_hint(tmp_path):
    # an allocator that zeroes a large object, flushes every line, then fences once (pm_alloc.c)
    trace, point = _buffer(tmp_path, bytes(8), flush=True)
    assert point.legal >= pending.EXPLODES
    assert pending.unflushed_units(trace, point) == [] and pending.pending_hint(trace, point) is None


def test_sites_are_named_relative_to_the_checkout(tmp_path):
    # issue 49 point 8: no absolute path, as the rest of the summary names sites
    from crashcheck.harness.target.structures import ROOT
    trace, point = _buffer(tmp_path, b"\x01" * 8, flush=False, file=str(ROOT / "trees" / "hart" / "epalloc.c"))
    hint = pending.pending_hint(trace, point)
    assert "objects allocated at trees/hart/epalloc.c:40 in fill" in hint and str(ROOT) not in hint
