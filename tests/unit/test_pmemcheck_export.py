"""`crashcheck trace export --format pmemcheck` (crashsim/pmemcheck_export.py): the log has the
sample logs' shape, passes pmreorder's entry rules, and imports back to the same events and the
same legal crash-state counts."""
from __future__ import annotations

import re

import pytest

from cli_run import ROOT, run_cli
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.pmemcheck_export import export_log
from crashcheck.crashsim.pmemcheck_import import import_log
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter

SAMPLES = ROOT.parent / "shared" / "pmemcheck"
PMREORDER_OPS = {"STORE", "FLUSH", "FENCE", "REGISTER_FILE"}


def pmreorder_entries(text: str) -> list[str]:
    """The entries pmreorder's OpsContext would hand to its OperationFactory, checked the way it
    checks them: a known operation, or a marker ending in .BEGIN / .END that nests."""
    ops = text.split("|")
    start = max(i for i, e in enumerate(ops) if "START" in e)
    stop = max(i for i, e in enumerate(ops) if "STOP" in e)
    entries = ops[start + 1:stop]
    stack = []
    for e in entries:
        name = e.split(";")[0]
        if name in PMREORDER_OPS:
            continue
        assert name.endswith((".BEGIN", ".END")), f"pmreorder rejects marker {name!r}"
        if name.endswith(".BEGIN"):
            stack.append(name[:-len(".BEGIN")])
        else:
            assert stack and stack.pop() == name[:-len(".END")], f"crossing marker {name!r}"
    return entries


def legal(trace) -> list[int]:
    sim = Simulator.from_trace(trace, ModelOptions())
    return [cp.legal for cp in sim.crash_points()]


def view(trace) -> list[tuple]:
    """Events as (kind, sub, addr, size, data, site text): what a round trip must keep."""
    out = []
    for ev in trace.events:
        site = trace.site(ev.site)
        where = (site.file, site.line, site.func, site.inlined_func) if site else None
        out.append((ev.kind, ev.sub, ev.addr, ev.size, ev.data, where))
    return out


def handmade(tmp_path):
    w = TraceWriter(pool_size=4096)
    s1 = w.site("tree.c", 12, "insert")
    s2 = w.site("pm.h", 7, "persist", inlined_file="tree.c", inlined_line=30, inlined_func="insert")
    w.op_begin(0)
    w.store(0x40, (7).to_bytes(8, "little"), site=s1)
    w.store(0x83, b"\x01\x02\x03", site=s2)
    w.flush(0x40, "clwb", site=s2)
    w.flush(0x80, "clflushopt")
    w.fence("sfence")
    w.mark("checkpoint")
    w.op_end(0)
    w.op_begin(1)
    w.store(0x100, bytes(range(40)), origin="memset")     # wider than 8: split on export
    w.flush(0x100, "clflush")
    w.fence("mfence")
    w.store(0x200, b"\xff" * 8, origin="cmpxchg")
    w.op_end(1)
    path = w.write(tmp_path / "hand.trace")
    return read_trace(path)


def test_sample_round_trip(tmp_path):
    first = tmp_path / "a.trace"
    import_log(SAMPLES / "basic-stacks.log", first)
    a = read_trace(first)
    res = run_cli("trace", "export", first, "--format", "pmemcheck", "-o", tmp_path / "a.log")
    assert res.returncode == 0, res.stderr
    import_log(tmp_path / "a.log", tmp_path / "b.trace", images=[str(first) + ".region0"])
    b = read_trace(tmp_path / "b.trace")
    assert view(a) == view(b)
    assert legal(a) == legal(b)
    assert sum(legal(a)) == 73


def test_handmade_round_trip(tmp_path):
    a = handmade(tmp_path)
    notes = export_log(a, tmp_path / "h.log")
    assert notes == ["1 marks left out (pmreorder takes only labels ending in .BEGIN or .END; "
                     "--markers plain keeps them)"]
    text = (tmp_path / "h.log").read_text()
    entries = pmreorder_entries(text)
    assert entries[0] == f"REGISTER_FILE;{(tmp_path / 'hand.trace.region0').resolve()};0x600000000000;0x1000;0x0"
    assert "STORE;0x600000000083;0x30201;0x3;0x0: persist (pm.h:7)0x0: insert (tree.c:30)" in entries
    assert entries.count("FENCE") == 2              # no fence added after the clflush
    assert [e for e in entries if e.startswith("op.")] == ["op.0.BEGIN", "op.0.END", "op.1.BEGIN", "op.1.END"]
    import_log(tmp_path / "h.log", tmp_path / "b.trace")
    b = read_trace(tmp_path / "b.trace")
    # the 40-byte store comes back as five 8-byte stores; flavours and origins are not kept
    stores_a = [(e.addr, e.data) for e in a.events if e.kind == "store"]
    stores_b = [(e.addr, e.data) for e in b.events if e.kind == "store"]
    wide = bytes(range(40))
    expect = [s for s in stores_a if len(s[1]) <= 8]
    expect[2:2] = [(0x600000000100 + i, wide[i:i + 8]) for i in range(0, 40, 8)]
    assert stores_b == expect
    kinds = lambda t: [e.kind for e in t.events if e.kind not in ("store", "mark")]   # noqa: E731
    assert kinds(a) == kinds(b)
    assert [e.addr for e in a.events if e.kind == "flush"] == [e.addr for e in b.events if e.kind == "flush"]
    assert [e.data for e in b.events if e.kind == "mark"] == []
    # our 40-byte memset's five pieces (one line) persist in any order: 2^5 states at the crash
    # point after it; exported as five plain stores they come back in address order (6 prefixes)
    la, lb = legal(a), legal(b)
    diff = [i for i, (x, y) in enumerate(zip(la, lb)) if x != y]
    assert len(la) == len(lb) and diff == [4] and (la[4], lb[4]) == (32, 6)


def test_plain_markers_and_sample_shape(tmp_path):
    a = handmade(tmp_path)
    export_log(a, tmp_path / "p.log", markers="plain", file_names=["pool.img"])
    lines = (tmp_path / "p.log").read_text().split("\n")
    assert len(lines) == 2 and lines[1] == ""       # one line, as pmemcheck -q --print-summary=no
    assert re.match(r"==\d+== START\|REGISTER_FILE;pool.img;0x600000000000;0x1000;0x0\|op_begin 0\|", lines[0])
    assert lines[0].endswith("|op_end 1|STOP")
    b = tmp_path / "p.trace"
    import_log(tmp_path / "p.log", b)
    events = read_trace(b).events
    assert [(e.kind, e.addr) for e in events if e.kind.startswith("op_")] == [
        ("op_begin", 0), ("op_end", 0), ("op_begin", 1), ("op_end", 1)]
    assert [e.data for e in events if e.kind == "mark"] == [b"checkpoint"]


def test_what_the_format_cannot_hold(tmp_path):
    w = TraceWriter(pool_size=4096)
    w.ntstore(0x0, b"\x01" * 8)
    w.alloc(0x40, 32)
    w.load(0x0, 8)
    w.fence()
    a = read_trace(w.write(tmp_path / "nt.trace"))
    res = run_cli("trace", "export", tmp_path / "nt.trace", "-o", tmp_path / "nt.log")
    assert res.returncode == 0, res.stderr
    assert "1 non-temporal stores written as plain STOREs" in res.stdout
    assert "1 alloc events (no pmemcheck entry)" in res.stdout
    assert "1 load events (no pmemcheck entry)" in res.stdout
    assert "|STORE;0x600000000000;0x101010101010101;0x8|FENCE" in (tmp_path / "nt.log").read_text()
    assert a.events[0].kind == "ntstore"


@pytest.mark.parametrize("bad", ["--format=pmreorder", "--markers=xml"])
def test_bad_options(tmp_path, bad):
    res = run_cli("trace", "export", tmp_path / "x.trace", bad, "-o", tmp_path / "x.log")
    assert res.returncode == 2


@pytest.mark.parametrize("args", [
    ("trace", "import", SAMPLES / "basic.log", "-o", "/nonexistent/x.trace"),
    ("trace", "export", "{trace}", "-o", "/nonexistent/x.log"),
    ("trace", "export", "{trace}", "-o", "{tmp}/x.log", "--file-name", "a|b"),
])
def test_unwritable_output_is_one_line(tmp_path, args):
    trace = read_trace(TraceWriter(pool_size=4096).write(tmp_path / "t.trace")).path
    res = run_cli(*[str(a).format(trace=trace, tmp=tmp_path) for a in args])
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
