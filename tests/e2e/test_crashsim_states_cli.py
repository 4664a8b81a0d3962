"""`crashcheck states` end to end on binary traces written by crashcheck.crashsim.trace_writer, and the
writer's agreement with the reader (crashsim/trace.py)."""
from __future__ import annotations

import json

import pytest

from crashcheck.crashsim.trace import read_trace
from crashcheck.crashsim.trace_writer import TraceWriter
from crashcheck.harness.cli.main import main


def u64(v: int) -> bytes:
    return v.to_bytes(8, "little")


def sample(path) -> str:
    """Two operations: the first persists a 16-byte record and leaves a line dirty, the second
    makes an NT store and a cached store and fences without flushing."""
    w = TraceWriter(pool_size=8192)
    w.op_begin(0)
    w.store(0, u64(1))
    w.store(8, u64(2))
    w.store(64, b"x" * 16)
    w.persist(0, 16)
    w.op_end(0)
    w.op_begin(1)
    w.ntstore(128, u64(3))
    w.store(0, u64(4))
    w.fence()
    w.op_end(1)
    w.write(path)
    return str(path)


def run_json(capsys, *argv) -> list[dict]:
    assert main(["states", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    run_json.stderr = captured.err
    return [json.loads(line) for line in captured.out.splitlines()]


def test_json_per_crash_point(tmp_path, capsys):
    rows = run_json(capsys, sample(tmp_path / "t.trace"))
    assert [(r["event"], r["kind"], r["op"], r["legal"], r["explored"]) for r in rows] == [
        (0, "op_begin", None, 1, 1),
        (5, "fence", 0, 9, 9),          # lines 0 (2 pieces) and 64 (2 pieces): 3 * 3
        (6, "op_end", None, 3, 3),      # line 0 guaranteed, line 64 still pending
        (7, "op_begin", None, 3, 3),
        (10, "fence", 1, 12, 12),       # + the NT store (x2) and the new store to line 0 (x2)
        (11, "op_end", None, 6, 6),     # the fence guaranteed the NT store only
        (12, "end", None, 6, 6)]
    assert rows[4]["pending_lines"] == [0, 64, 128] and rows[4]["pending_pieces"] == 4
    # op_end(0) and op_begin(1) see the same images: all answered by the cache
    assert rows[3]["cached"] == 3 and rows[0]["cached"] == 0


def test_eadr(tmp_path, capsys):
    rows = run_json(capsys, sample(tmp_path / "t.trace"), "--model", "eadr")
    assert [r["legal"] for r in rows] == [1, 5, 1, 1, 3, 1, 1]


def test_bounded_limit_and_exhaustive(tmp_path, capsys):
    path = sample(tmp_path / "t.trace")
    rows = run_json(capsys, path, "--limit", "7", "--seed", "3")
    assert rows[1]["legal"] == 9 and rows[1]["explored"] == 7
    # three units (line 0, line 64, the NT store): 2 + 2 * 3 boundary states, kept beyond the limit
    assert rows[4]["legal"] == 12 and rows[4]["explored"] == 8
    rows = run_json(capsys, path, "--strategy", "exhaustive", "--limit", "2")
    assert [r["explored"] for r in rows] == [r["legal"] for r in rows]


def test_list_shows_kept_pieces(tmp_path, capsys):
    rows = run_json(capsys, sample(tmp_path / "t.trace"), "--list")
    states = rows[5]["states"]                     # op_end(1): line 64 (2 pieces) x line 0 (1 piece)
    assert len(states) == 6
    kept = sorted(tuple((p["event"], p["part"]) for p in s) for s in states)
    assert kept == [(), ((3, 0),), ((3, 0), (3, 1)), ((3, 0), (3, 1), (9, 0)), ((3, 0), (9, 0)), ((9, 0),)]
    assert states[0] == [] and {"off", "size", "data", "tid", "nt"} <= set(rows[4]["states"][1][0])


def test_text_output(tmp_path, capsys):
    assert main(["states", sample(tmp_path / "t.trace"), "--list"]) == 0
    out = capsys.readouterr().out
    assert "total: 7 crash points, 40 legal states, 40 explored" in out
    assert "keeps nt e8.0@r0+0x80/8" in out
    assert "keeps nothing" in out


def test_user_errors(tmp_path, capsys):
    assert main(["states", str(tmp_path / "missing.trace")]) == 2
    assert "no such trace file" in capsys.readouterr().err
    path = sample(tmp_path / "t.trace")
    assert main(["states", path, "--atomic-unit", "3"]) == 2
    assert "power of two" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["states", path, "--limit", "0"])


def test_cut_trace_warns_and_still_counts(tmp_path, capsys):
    w = TraceWriter()
    w.store(0, u64(1))
    w.write(tmp_path / "cut.trace", complete=False)
    rows = run_json(capsys, str(tmp_path / "cut.trace"))
    assert rows[-1]["legal"] == 2
    assert "trace cut" in run_json.stderr


def test_writer_round_trip(tmp_path):
    image = bytes(4096 * 2 + 100) + b"\x07" * 12 + bytes(4096 - 112)
    w = TraceWriter(pool_size=len(image), image=image, pid=42, loads=True)
    site = w.site("tree.c", 12, "insert", column=5, inlined_file="node.c", inlined_line=7,
                  inlined_func="persist")
    for i in range(10000):                            # several chunks
        w.store(8 * (i % 100), u64(i), site=site, origin="memcpy", tid=i % 3)
    w.flush(72, "clflushopt", tid=1)
    w.fence("locked")
    w.mark("hello")
    w.alloc(256, 64)
    w.free(256)
    w.load(8, 8)
    w.op_begin(3)
    w.op_end(3)
    path = w.write(tmp_path / "r.trace", chunk_events=1000)
    t = read_trace(path)
    assert t.complete and t.pid == 42 and t.loads and t.pool_size == len(image)
    assert t.events == w.events()
    assert t.region_image(0) == image
    assert t.sites[site].describe() == "tree.c:12 in insert (inlined into persist at node.c:7)"
    e = t.events[9999]
    assert (e.kind, e.sub, e.off, e.tid, e.data) == ("store", "memcpy", 8 * 99, 0, u64(9999))
    assert t.events[10000].addr == w.pool_base + 64 and t.events[10000].sub == "clflushopt"
    # the image file is sparse-written but has the pool's exact size
    assert (tmp_path / "r.trace.region0").stat().st_size == len(image)
