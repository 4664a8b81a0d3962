"""`crashcheck trace import`: pmemcheck store logs -> traces (crashsim/pmemcheck_import.py).

The sample logs are real pmemcheck output recorded elsewhere (../shared/pmemcheck/README.md); the
malformed ones are basic.log with one entry changed, each on a line of its own (line 8) so the
error must name that line.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from cli_run import ROOT, run_cli
from crashcheck.crashsim.pmemcheck_import import import_log
from crashcheck.crashsim.trace import NO_SITE, read_trace

SAMPLES = ROOT.parent / "shared" / "pmemcheck"
BASE = 0x5200000
pytestmark = pytest.mark.skipif(not (SAMPLES / "basic.log").exists(),
                                reason=f"sample pmemcheck logs not found in {SAMPLES}")

# log -> events per kind, FLUSH entries, sites, start-up fences dropped, aliases folded
EXPECTED = {
    "basic.log": ({"store": 14, "flush": 6, "fence": 10, "op_begin": 3, "op_end": 3}, 6, 0, 81, 0),
    "basic-stacks.log": ({"store": 14, "flush": 6, "fence": 10, "op_begin": 3, "op_end": 3}, 6, 8, 81, 0),
    "obj.log": ({"store": 49969, "flush": 50436, "fence": 42, "op_begin": 2, "op_end": 2}, 42, 0, 81, 1),
}

# log -> (event index, kind, offset in region 0, size, data)
EVENTS = [
    ("basic.log", 1, "store", 0x0, 8, bytes.fromhex("8877665544332211")),
    ("basic.log", 2, "flush", 0x0, 64, b""),
    ("basic.log", 4, "store", 0x40, 4, bytes.fromhex("efbeadde")),
    # the 40-byte memset as the machine stored it: +0x20, +0x10, +0x18, +0x00, +0x08
    ("basic.log", 9, "store", 0xa0, 8, b"\xab" * 8),
    ("basic.log", 10, "store", 0x90, 8, b"\xab" * 8),
    ("basic.log", 12, "store", 0x80, 8, b"\xab" * 8),
    # clflush(pm + 128 + 39): FLUSH;0x52000a7;0x40 is the one line 0x5200080
    ("basic.log", 16, "flush", 0x80, 64, b""),
    ("basic.log", 19, "store", 0x100, 8, bytes.fromhex("0807060504030201")),
    # the pool header, written through libpmemobj's second mapping at 0x483c000, lands at +0
    ("obj.log", 0, "store", 0x0, 8, b"PMEMOBJ\0"),
]

# basic-stacks.log: event index -> (file, line, function) of its site
SITES = {1: ("pmc_basic.c", 19, "main"), 9: ("pmc_basic.c", 27, "main"),
         21: ("pmc_basic.c", 34, "main"), 34: ("pmc_basic.c", 40, "main"),
         29: ("/usr/lib/x86_64-linux-gnu/libpmem.so.1.0.0", 0, "")}


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    """Each sample imported once: name -> (ImportResult, Trace)."""
    out = {}
    work = tmp_path_factory.mktemp("pmc-import")
    for name in EXPECTED:
        res = import_log(SAMPLES / name, work / f"{name}.trace")
        out[name] = (res, read_trace(work / f"{name}.trace"))
    return out


@pytest.mark.parametrize("name", list(EXPECTED))
def test_sample_counts(imported, name):
    kinds, flush_entries, sites, startup, folded = EXPECTED[name]
    res, trace = imported[name]
    got = {}
    for ev in trace.events:
        got[ev.kind] = got.get(ev.kind, 0) + 1
    assert got == kinds
    assert res.entries["FLUSH"] == flush_entries
    assert len(trace.sites) == sites
    assert res.startup_fences == startup
    assert len(res.folded) == folded
    assert trace.complete
    assert [(r.base, r.size) for r in trace.regions] == [(BASE, 0x800000 if name == "obj.log" else 0x10000)]
    assert trace.region_image(0) == bytes(trace.regions[0].size)      # all zero: nothing given
    assert {ev.sub for ev in trace.events if ev.kind == "store"} == {"plain"}


@pytest.mark.parametrize("name,index,kind,off,size,data", EVENTS)
def test_sample_events(imported, name, index, kind, off, size, data):
    ev = imported[name][1].events[index]
    assert (ev.kind, ev.region, ev.off, ev.size, ev.data) == (kind, 0, off, size, data)


def test_stack_sites(imported):
    trace = imported["basic-stacks.log"][1]
    for index, (file, line, func) in SITES.items():
        site = trace.site(trace.events[index].site)
        assert (site.file, site.line, site.func) == (file, line, func), index
    assert all(ev.site == 0xFFFFFFFF for ev in trace.events if ev.kind != "store")


def test_operation_markers(imported):
    trace = imported["basic.log"][1]
    ops = [(ev.kind, ev.addr) for ev in trace.events if ev.kind.startswith("op_")]
    assert ops == [("op_begin", 0), ("op_end", 0), ("op_begin", 1), ("op_end", 1),
                   ("op_begin", 2), ("op_end", 2)]


def test_obj_log_imports_in_under_two_seconds(tmp_path):
    """CPU time, so that a busy machine does not decide it (wall time is in docs/pmemcheck.md)."""
    start = time.process_time()
    import_log(SAMPLES / "obj.log", tmp_path / "obj.trace")
    assert time.process_time() - start < 2.0


def test_image_option(tmp_path):
    pool = tmp_path / "pool.img"
    pool.write_bytes(b"\x01" * 100)         # shorter than the region: the rest is zero
    res = run_cli("trace", "import", SAMPLES / "basic.log", "-o", tmp_path / "t.trace", "--image", pool)
    assert res.returncode == 0, res.stderr
    assert f"initial image from {pool}" in res.stdout
    image = read_trace(tmp_path / "t.trace").region_image(0)
    assert image[:100] == b"\x01" * 100 and image[100:] == bytes(0x10000 - 100)


def test_cli_import_show_stats_states(tmp_path):
    trace = tmp_path / "bs.trace"
    res = run_cli("trace", "import", SAMPLES / "basic-stacks.log", "-o", trace)
    assert res.returncode == 0, res.stderr
    assert "14 stores, 6 line flushes (from 6 FLUSH entries), 10 fences" in res.stdout
    assert "initial image all zero" in res.stdout
    assert "81 fences before the first registration" in res.stdout
    show = run_cli("trace", "show", trace)
    assert show.returncode == 0, show.stderr
    lines = show.stdout.splitlines()
    assert "+0x0 size 8 = 8877665544332211" in lines[2] and "pmc_basic.c:19 in main" in lines[2]
    assert sum("pmc_basic.c:27 in main" in line for line in lines) == 5
    stats = run_cli("trace", "stats", trace)
    assert stats.returncode == 0 and "store.plain" in stats.stdout
    states = run_cli("states", trace)
    assert states.returncode == 0, states.stderr
    assert states.stdout.splitlines()[-1].startswith("total: 17 crash points, 73 legal states")


def _basic_with(tmp_path: Path, extra: str, drop_register: bool = False) -> Path:
    """basic.log with EXTRA as a continuation line 8 of the store log (before |STOP)."""
    lines = (SAMPLES / "basic.log").read_text().split("\n")
    if drop_register:
        lines[6] = lines[6].replace("|REGISTER_FILE;pool.img;0x5200000;0x10000;0x0", "")
    lines.insert(7, f"==PID== |{extra}")
    path = tmp_path / "bad.log"
    path.write_text("\n".join(lines))
    return path


# case, entry added as line 8, REGISTER_FILE removed, where the error is, what it says
MALFORMED = [
    ("truncated", "STORE;0x5200000;0x11", False, "8: entry 1", "STORE has 2 fields"),
    ("unknown", "LOAD;0x5200000;0x8", False, "8: entry 1", "unknown entry 'LOAD'"),
    ("bad-number", "STORE;0x5200000;0xzz;0x8", False, "8: entry 1", "bad number '0xzz' (value)"),
    ("bad-size", "STORE;0x5200000;0x1;0x10", False, "8: entry 1", "store size 16"),
    ("outside", "STORE;0x9000000;0x1;0x8", False, "8: entry 1", "outside every registered PM region"),
    # without its REGISTER_FILE, the first store of basic.log (line 7, entry 83) has no region
    ("unregistered", "FENCE", True, "7: entry 83", "before any REGISTER_FILE"),
    ("bad-op", "op_begin x", False, "8: entry 1", "bad operation marker"),
    ("bad-frame", "STORE;0x5200000;0x1;0x8;main (a.c:1)", False, "8: entry 1", "bad stack frame"),
    ("bad-object", "alloc 0x5200040", False, "8: entry 1", "bad object marker"),
    ("object-outside", "alloc 0x9000000 16", False, "8: entry 1", "alloc of 0x9000000 outside every"),
]


@pytest.mark.parametrize("case,extra,drop,where,message", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_log(tmp_path, case, extra, drop, where, message):
    log = _basic_with(tmp_path, extra, drop)
    res = run_cli("trace", "import", log, "-o", tmp_path / "t.trace")
    assert res.returncode == 2
    err = res.stderr.strip().splitlines()
    assert len(err) == 1, res.stderr
    assert err[0].startswith(f"crashcheck: error: {log}:{where} "), err[0]
    assert message in err[0]
    assert not (tmp_path / "t.trace").exists()


def test_log_without_store_log(tmp_path):
    log = tmp_path / "plain.log"
    log.write_text("==1== Memcheck, a memory error detector\n==1== ERROR SUMMARY: 0 errors\n")
    res = run_cli("trace", "import", log, "-o", tmp_path / "t.trace")
    assert res.returncode == 2 and "--log-stores=yes" in res.stderr


def test_log_without_stop_is_a_cut_trace(tmp_path):
    lines = (SAMPLES / "basic.log").read_text().split("\n")[:7]
    (tmp_path / "cut.log").write_text("\n".join(lines) + "\n")
    res = run_cli("trace", "import", tmp_path / "cut.log", "-o", tmp_path / "t.trace")
    assert res.returncode == 0, res.stderr
    assert "no STOP" in res.stdout
    trace = read_trace(tmp_path / "t.trace")
    assert not trace.complete and len(trace.events) == 36


def test_region_option_for_unnamed_mappings(tmp_path):
    log = _basic_with(tmp_path, "FENCE", drop_register=True)
    res = run_cli("trace", "import", log, "-o", tmp_path / "t.trace", "--region", "0x5200000:0x10000")
    assert res.returncode == 0, res.stderr
    assert "region 0: --region at 0x5200000, size 0x10000" in res.stdout
    # a region given up front also keeps the 81 fences of the start-up (harmless: nothing pending)
    assert len(read_trace(tmp_path / "t.trace").events) == 81 + 36 + 1


def test_emit_log_text_becomes_mark(tmp_path):
    log = _basic_with(tmp_path, "checkpoint A|op.7.BEGIN|op.7.END")
    import_log(log, tmp_path / "t.trace")
    tail = read_trace(tmp_path / "t.trace").events[-3:]
    assert [(e.kind, e.data if e.kind == "mark" else e.addr) for e in tail] == [
        ("mark", b"checkpoint A"), ("op_begin", 7), ("op_end", 7)]


def test_object_markers_become_allocations_with_their_sites(tmp_path):
    """crashcheck's runtime under pmemcheck names PM objects in EMIT_LOG lines
    (instrument/runtime/rt_valgrind.c); they import as alloc/free events at the allocation's site."""
    log = _basic_with(tmp_path, "alloc 0x5200040 16 site trees/x/x.c:35:15 value_new inlined "
                      "trees/x/x.c:240:26 x_insert|alloc 0x5200080 24|free 0x5200040 site a.c:5:3 pm_free")
    trace = read_trace(import_log(log, tmp_path / "t.trace").trace)
    objs = [ev for ev in trace.events if ev.kind in ("alloc", "free")]
    assert [(ev.kind, ev.off, ev.size) for ev in objs] == [("alloc", 0x40, 16), ("alloc", 0x80, 24),
                                                           ("free", 0x40, 0)]
    site = trace.site(objs[0].site)
    assert (site.file, site.line, site.column, site.func) == ("trees/x/x.c", 35, 15, "value_new")
    assert (site.inlined_file, site.inlined_line, site.inlined_func) == ("trees/x/x.c", 240, "x_insert")
    assert objs[1].site == NO_SITE
    assert (trace.site(objs[2].site).file, trace.site(objs[2].site).line) == ("a.c", 5)


def test_a_later_mapping_of_the_whole_pool_file_becomes_the_pool(tmp_path):
    """pmemobj_open maps a pool's 4 KiB header, then the whole file: the whole mapping is the
    pool (region 0), the header mapping an alias of its first page."""
    log = tmp_path / "open.log"
    log.write_text("==1== START|FENCE|REGISTER_FILE;/p.obj;0x483c000;0x1000;0x0|"
                   "REGISTER_FILE;/p.obj;0x5200000;0x800000;0x0|REGISTER_FILE;/p.obj;0x483c000;0x1000;0x0|"
                   "STORE;0x483cfc8;0x1;0x1|STORE;0x5200100;0x2;0x8|STOP\n")
    res = import_log(log, tmp_path / "t.trace")
    trace = read_trace(res.trace)
    assert [(m.base, m.size) for m in res.regions] == [(0x5200000, 0x800000)]
    assert [(m.base, m.delta) for m in res.folded] == [(0x483c000, 0x5200000 - 0x483c000)]
    stores = [(ev.off, ev.data) for ev in trace.events if ev.kind == "store"]
    assert stores == [(0xfc8, b"\x01"), (0x100, (2).to_bytes(8, "little"))]


def test_region_markers_add_regions(tmp_path):
    """crashcheck_register_pm under pmemcheck: the range is a PM mapping (its stores are logged)
    named by a `region 0xADDR SIZE` marker, which imports as a region of its own."""
    log = _basic_with(tmp_path, "region 0x9000000 4096|STORE;0x9000010;0x2;0x8|FLUSH;0x9000000;0x40")
    res = import_log(log, tmp_path / "t.trace")
    trace = read_trace(res.trace)
    assert [(m.base, m.size) for m in res.regions][1:] == [(0x9000000, 4096)]
    ev = [e for e in trace.events if e.kind == "store" and e.region == 1]
    assert [(e.off, e.data) for e in ev] == [(0x10, (2).to_bytes(8, "little"))]


def test_a_second_pools_header_at_a_reused_address_and_a_glued_valgrind_message(tmp_path):
    """A program with two libpmemobj pools: libpmemobj maps each pool's 4 KiB header again on
    its own, the second at the address the first one's had (the log has no munmap), and Valgrind's
    brk warning may land on the end of a store-log line. Both pools become regions; the header
    views fold onto them; the glued message is dropped and its line counted as skipped."""
    log = tmp_path / "two.log"
    log.write_text(
        "==7== START|REGISTER_FILE;/x/p;0x5200000;0x2000;0x0|REGISTER_FILE;/x/p;0x483c000;0x1000;0x0"
        "|STORE;0x5200000;0x1;0x8brk segment overflow in thread #1: can't grow to 0x4850000\n"
        "==7== |STORE;0x483c008;0x2;0x8|REGISTER_FILE;/x/q;0x6600000;0x2000;0x0"
        "|REGISTER_FILE;/x/q;0x483c000;0x1000;0x0brk segment overflow in thread #1: can't grow to 0x4854000"
        "|STORE;0x483c010;0x3;0x8\n"
        "==7== (see section Limitations in user manual)\n"
        "==7== |STORE;0x6600018;0x4;0x8|STOP\n")
    res = import_log(log, tmp_path / "t")
    assert [(r.path, r.base) for r in res.regions] == [("/x/p", 0x5200000), ("/x/q", 0x6600000)]
    assert res.skipped_lines == [1, 2, 3]
    stores = [(e.region, e.off, e.data[0]) for e in read_trace(tmp_path / "t").events if e.kind == "store"]
    # the second store goes through p's header view, the third through q's (same address, later)
    assert stores == [(0, 0, 1), (0, 8, 2), (1, 0x10, 3), (1, 0x18, 4)]


def test_a_second_pool_opened_header_first_becomes_one_region(tmp_path):
    """pmemobj_open maps a pool's 4 KiB header, then the whole pool: for a second pool too, the
    whole mapping becomes the region (its header view an alias of its start), as long as no
    event used the header's addresses before."""
    log = tmp_path / "open.log"
    log.write_text(
        "==7== START|REGISTER_FILE;/x/p;0x5200000;0x2000;0x0|STORE;0x5200000;0x1;0x8"
        "|REGISTER_FILE;/x/q;0x483c000;0x1000;0x0|REGISTER_FILE;/x/q;0x6600000;0x3000;0x0"
        "|STORE;0x6602000;0x2;0x8|STORE;0x483c008;0x3;0x8|STOP\n")
    res = import_log(log, tmp_path / "t")
    assert [(r.path, r.base, r.size) for r in res.regions] == [("/x/p", 0x5200000, 0x2000),
                                                               ("/x/q", 0x6600000, 0x3000)]
    trace = read_trace(tmp_path / "t")
    assert [(r.base, r.size) for r in trace.regions] == [(0x5200000, 0x2000), (0x6600000, 0x3000)]
    stores = [(e.region, e.off, e.data[0]) for e in trace.events if e.kind == "store"]
    assert stores == [(0, 0, 1), (1, 0x2000, 2), (1, 8, 3)]


def test_a_source_compiled_by_its_absolute_path_keeps_that_path():
    """Valgrind names such a frame `cwd//abs/path.c`: the site is /abs/path.c, not the two joined
    (a record would otherwise name a file that does not exist)."""
    from crashcheck.crashsim.pmemcheck_import import _parse_desc
    assert _parse_desc("0x1094C3: main (/tmp/run//work/src/pmlog.c:64)") == ("main", "/work/src/pmlog.c", 64, "")
    assert _parse_desc("0x1094C3: main (/tmp/run/src/pmlog.c:64)") == ("main", "/tmp/run/src/pmlog.c", 64, "")
