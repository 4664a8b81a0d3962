"""The trace reader on cut and broken traces (crashsim/trace.py, docs/trace-format.md).

Real traces come from tests/corpus/support/bulk.c (op_begin, N 8-byte stores, op_end): with
N = 100,000 the trace spans several 1 MiB chunks, and every store event is a 16-byte compact
`store8`, so the tests can compute where each cut falls without the reader's help.
"""
from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from corpus import corpuslib
from crashcheck.crashsim.trace import NO_SITE, TraceError, encode_store8, read_trace
from crashcheck.crashsim.trace_writer import TraceWriter

N = 100_000
STORE_EVENT = 16   # store8: one word (kind, site, offset in region 0) + 8 bytes written
CHUNK_HDR = struct.Struct("<IIQ")


@pytest.fixture(scope="session")
def bulk(instrument_built, tmp_path_factory):
    return corpuslib.build_support("bulk", tmp_path_factory.getbasetemp() / "support-builds")


@pytest.fixture(scope="session")
def full_trace(bulk, tmp_path_factory):
    """A complete multi-chunk trace: (path, Trace, [(chunk offset, events in it)])."""
    work = tmp_path_factory.mktemp("bulk-full")
    res, tr = corpuslib.run(bulk, work, str(N), "exit")
    assert res.returncode == 0, res.stderr
    trace = read_trace(tr)
    raw = tr.read_bytes()
    pos = raw.index(struct.pack("<I", 0x56454343))    # first chunk: right after the site table
    chunks = []
    while pos < len(raw):
        magic, nevents, plen = CHUNK_HDR.unpack_from(raw, pos)
        assert magic == 0x56454343
        chunks.append((pos, nevents, plen))
        pos += CHUNK_HDR.size + plen
    assert pos == len(raw)
    return tr, trace, chunks


def cut_copy(src: Path, dst_dir: Path, length: int) -> Path:
    """The first LENGTH bytes of trace SRC (with its region image) in DST_DIR."""
    dst = dst_dir / "trace"
    dst.write_bytes(src.read_bytes()[:length])
    shutil.copy(f"{src}.region0", f"{dst}.region0")
    return dst


def test_full_trace_is_complete(full_trace):
    _, trace, chunks = full_trace
    assert trace.complete and trace.cut_reason == ""
    assert len(chunks) >= 2, "the test needs a trace of several chunks"
    kinds = [e.kind for e in trace.events]
    assert kinds == ["op_begin"] + ["store"] * N + ["op_end"]
    assert sum(n for _, n, _ in chunks) == len(trace.events) + 2   # + region and end events
    assert [e.data for e in trace.events[1:4]] == [struct.pack("<Q", i) for i in range(3)]


def test_cut_at_chunk_boundary(full_trace, tmp_path):
    tr, trace, chunks = full_trace
    pos, n1, plen = chunks[0]
    cut = read_trace(cut_copy(tr, tmp_path, pos + CHUNK_HDR.size + plen))
    read = n1 - 1                  # the first chunk also holds the region event
    assert not cut.complete
    assert cut.events == trace.events[:read]
    assert "no end marker" in cut.cut_reason
    assert f"read {read} events" in cut.cut_reason


@pytest.mark.parametrize("whole, extra", [(0, 5), (1000, 0), (1000, 15), (1, 9)])
def test_cut_mid_chunk(full_trace, tmp_path, whole, extra):
    """Cut after WHOLE complete store events of the second chunk and EXTRA bytes more."""
    tr, trace, chunks = full_trace
    (_, n1, _), (pos2, _, plen2) = chunks[0], chunks[1]
    length = pos2 + CHUNK_HDR.size + whole * STORE_EVENT + extra
    cut = read_trace(cut_copy(tr, tmp_path, length))
    read = n1 - 1 + whole
    assert not cut.complete
    assert cut.events == trace.events[:read]
    assert f"chunk 1 cut after {whole * STORE_EVENT + extra} of {plen2} bytes" in cut.cut_reason
    assert f"read {read} events" in cut.cut_reason


def test_cut_inside_chunk_header(full_trace, tmp_path):
    tr, trace, chunks = full_trace
    pos2 = chunks[1][0]
    cut = read_trace(cut_copy(tr, tmp_path, pos2 + 7))
    assert cut.events == trace.events[:chunks[0][1] - 1]
    assert "cut inside the header of chunk 1" in cut.cut_reason
    assert f"read {len(cut.events)} events" in cut.cut_reason


@pytest.mark.parametrize("how, status", [("segv", -11), ("abort", -6)])
def test_program_killed_by_signal_leaves_a_readable_trace(bulk, full_trace, tmp_path, how, status):
    """The runtime's fatal-signal handler writes everything logged before the death."""
    _, trace, _ = full_trace
    res, tr = corpuslib.run(bulk, tmp_path, str(N), how)
    assert res.returncode == status, res.stderr
    died = read_trace(tr)
    assert not died.complete
    assert died.events == trace.events            # every event up to op_end, none after
    assert f"read {N + 2} events" in died.cut_reason


def test_program_killed_by_sigkill_keeps_flushed_chunks(bulk, full_trace, tmp_path):
    """SIGKILL runs no handler: what crashcheck_trace_flush() wrote is all there is."""
    _, trace, _ = full_trace
    res, tr = corpuslib.run(bulk, tmp_path, str(N), "kill")
    assert res.returncode == -9, res.stderr
    died = read_trace(tr)
    assert not died.complete
    assert died.events == trace.events
    assert "no end marker" in died.cut_reason and f"read {N + 2} events" in died.cut_reason


# ---- bad input: one clear TraceError each ----

def patched(src: Path, dst_dir: Path, at: int, data: bytes) -> Path:
    raw = bytearray(src.read_bytes())
    raw[at:at + len(data)] = data
    dst = dst_dir / "trace"
    dst.write_bytes(bytes(raw))
    shutil.copy(f"{src}.region0", f"{dst}.region0")
    return dst


def test_not_a_trace_file(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello, I am not a trace\n" * 10)
    with pytest.raises(TraceError, match=r"notes\.txt: not a crashcheck trace"):
        read_trace(text)
    empty = tmp_path / "empty"
    empty.write_bytes(b"")
    with pytest.raises(TraceError, match="not a crashcheck trace"):
        read_trace(empty)
    with pytest.raises(TraceError, match="no such trace file"):
        read_trace(tmp_path / "missing")


def test_unknown_version(full_trace, tmp_path):
    tr = patched(full_trace[0], tmp_path, 8, struct.pack("<I", 7))
    with pytest.raises(TraceError, match="unknown trace version 7 .*reads versions 1, 2, 3"):
        read_trace(tr)


def test_store8_is_a_plain_store_and_version_1_is_still_read(tmp_path):
    """The compact store8 form and the long form read back as the same events; a version-1 trace
    (no store8 events) still reads."""
    w = TraceWriter(pool_size=4096)
    s = w.site("t.c", 7, "f")
    w.op_begin(0)
    w.store(0x40, (5).to_bytes(8, "little"), site=s)          # store8
    w.store(0x48, (6).to_bytes(8, "little"))                  # store8, no site
    w.store(0x50, (7).to_bytes(8, "little"), tid=1)           # long form: thread 1
    w.store(0x58, (8).to_bytes(8, "little"), origin="atomic")  # long form: not plain
    w.store(0x60, b"\1\2\3\4")                               # long form: 4 bytes
    w.op_end(0)
    compact = read_trace(w.write(tmp_path / "c.trace"))
    long = read_trace(w.write(tmp_path / "l.trace", compact=False))
    assert compact.events == long.events == w.events()
    raw = (tmp_path / "c.trace").read_bytes()
    assert len(raw) == len((tmp_path / "l.trace").read_bytes()) - 2 * 8
    # versions 1 and 2: site records without flags and chain (version 1 has no store8 either)
    for version, compact in ((1, False), (2, True)):
        old = read_trace(w.write(tmp_path / f"v{version}.trace", compact=compact, version=version))
        assert old.events == w.events() and old.sites[s].file == "t.c" and old.sites[s].line == 7


def test_store8_outside_region_0_is_corrupt(tmp_path):
    w = TraceWriter(pool_size=4096)
    w.store(0xFF8, bytes(8))                                  # the last word of the pool: fine
    path = w.write(tmp_path / "t.trace")
    assert read_trace(path).events[0].off == 0xFF8
    raw = bytearray(path.read_bytes())
    at = raw.index(encode_store8(NO_SITE, 0xFF8, bytes(8)))
    raw[at:at + 16] = encode_store8(NO_SITE, 0xFFC, bytes(8))  # runs past the pool's end
    path.write_bytes(raw)
    with pytest.raises(TraceError, match=r"corrupt trace: event 0 at byte \d+ stores at offset 0xffc, outside region 0"):
        read_trace(path)


def test_truncated_header_and_site_table(full_trace, tmp_path):
    tr, _, chunks = full_trace
    with pytest.raises(TraceError, match="truncated header"):
        read_trace(cut_copy(tr, tmp_path, 40))
    with pytest.raises(TraceError, match="truncated site table"):
        read_trace(cut_copy(tr, tmp_path, chunks[0][0] - 3))


def test_corrupt_chunk_magic(full_trace, tmp_path):
    tr, _, chunks = full_trace
    pos2 = chunks[1][0]
    bad = patched(tr, tmp_path, pos2, b"XXXX")
    with pytest.raises(TraceError, match=rf"corrupt trace: bad chunk magic at byte {pos2} "
                                         rf"\(after {chunks[0][1] - 1} events\)"):
        read_trace(bad)


def test_corrupt_event_kind(full_trace, tmp_path):
    tr, _, chunks = full_trace
    pos2 = chunks[1][0]
    bad = patched(tr, tmp_path, pos2 + CHUNK_HDR.size + 2 * STORE_EVENT, bytes([99]))
    with pytest.raises(TraceError, match=r"corrupt trace: event \d+ at byte \d+ has kind 99"):
        read_trace(bad)


def test_chunk_claims_more_events_than_it_holds(full_trace, tmp_path):
    tr, _, chunks = full_trace
    pos1, n1, _ = chunks[0]
    bad = patched(tr, tmp_path, pos1 + 4, struct.pack("<I", n1 + 1))
    with pytest.raises(TraceError, match="chunk 0 holds fewer events than it says"):
        read_trace(bad)


def test_region_image_missing_or_short(full_trace, tmp_path):
    tr, trace, _ = full_trace
    copy = cut_copy(tr, tmp_path, tr.stat().st_size)
    image = Path(f"{copy}.region0")
    assert read_trace(copy).events == trace.events
    image.unlink()
    with pytest.raises(TraceError, match=r"region 0 image .*trace\.region0 is missing"):
        read_trace(copy)
    image.write_bytes(b"\0" * 4096)
    with pytest.raises(TraceError, match=r"region 0 image .* has 4096 bytes, the trace says 1048576"):
        read_trace(copy)
    # Without the image check the events are still readable (the image is only needed later).
    assert read_trace(copy, check_images=False).events == trace.events
