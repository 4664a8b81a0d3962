"""Fuzzing the readers: real traces, bug records and results files, corrupted by
Hypothesis (cuts, byte flips, splices; JSON values replaced by other types, keys dropped), must
give either a clean error (TraceError / UsageError: one line; through the CLI exit 2 and one
stderr line) or a correct read. Deterministic (derandomize) and bounded, so it runs in CI."""
from __future__ import annotations

import copy
import json
import shutil
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostile
from crashcheck.crashsim.trace import ADDR_MASK, NO_SITE, Trace, TraceError, read_trace
from crashcheck.harness.triage import record_formats
from crashcheck.harness.cli.main import main
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.render.report import render

FUZZ = settings(max_examples=60, derandomize=True, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@pytest.fixture(scope="module")
def original(readers_base):
    return readers_base.trace.read_bytes(), read_trace(readers_base.trace)


def put(tmp: Path, base_trace: Path, raw: bytes) -> Path:
    dst = tmp / base_trace.name
    dst.write_bytes(raw)
    image = Path(f"{dst}.region0")
    if not image.exists():
        shutil.copy(f"{base_trace}.region0", image)
    return dst


def sound(trace: Trace) -> None:
    """What every trace the reader returns must satisfy, however odd its bytes were."""
    assert [e.seq for e in trace.events] == list(range(len(trace.events)))
    for r in trace.regions:
        assert 0 < r.size and r.base + r.size <= ADDR_MASK + 1 and r.image.parent == trace.path.parent
    for e in trace.events:
        if e.kind in ("store", "ntstore"):
            assert len(e.data) == e.size
        if e.region is not None:
            r = trace.regions[e.region]
            assert e.off == e.addr - r.base and 0 <= e.off < r.size
    assert trace.complete or trace.cut_reason


def one_line(exc: Exception) -> None:
    text = str(exc)
    assert text and "\n" not in text and "Traceback" not in text


@FUZZ
@given(cut=st.integers(0, 1 << 20))
def test_cut_trace(readers_base, original, tmp_path, cut):
    """A trace cut anywhere: an error (inside the header or site table) or a prefix of the events."""
    raw, full = original
    cut %= len(raw) + 1
    path = put(tmp_path, readers_base.trace, raw[:cut])
    try:
        trace = read_trace(path)
    except TraceError as exc:
        one_line(exc)
        assert cut < len(raw)
        return
    sound(trace)
    assert trace.events == full.events[:len(trace.events)]
    assert trace.complete == (cut == len(raw))


mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, 1 << 20), st.integers(1, 255)),
    st.tuples(st.just("set"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("splice"), st.integers(0, 1 << 20), st.integers(0, 1 << 20), st.integers(1, 64)),
    st.tuples(st.just("delete"), st.integers(0, 1 << 20), st.integers(1, 64)),
    st.tuples(st.just("insert"), st.integers(0, 1 << 20), st.binary(min_size=1, max_size=24)),
)


def mutate(raw: bytes, muts) -> bytes:
    data = bytearray(raw)
    for m in muts:
        n = len(data) or 1
        if m[0] == "flip":
            data[m[1] % n] ^= m[2]
        elif m[0] == "set":
            i = m[1] % n
            data[i:i + len(m[2])] = m[2]
        elif m[0] == "splice":
            a, c = m[1] % n, m[2] % n
            data[c:c] = data[a:a + m[3]]
        elif m[0] == "delete":
            i = m[1] % n
            del data[i:i + m[2]]
        else:
            i = m[1] % n
            data[i:i] = m[2]
    return bytes(data)


@FUZZ
@given(muts=st.lists(mutation, min_size=1, max_size=4))
def test_corrupt_trace(readers_base, original, tmp_path, muts):
    raw, _ = original
    path = put(tmp_path, readers_base.trace, mutate(raw, muts))
    try:
        trace = read_trace(path)
    except TraceError as exc:
        one_line(exc)
        return
    sound(trace)


@settings(FUZZ, max_examples=12)
@given(muts=st.lists(mutation, min_size=1, max_size=3), command=st.sampled_from(
    [["trace", "stats", "{}"], ["trace", "show", "--json", "{}"], ["states", "{}", "--limit", "1"]]))
def test_corrupt_trace_cli(readers_base, original, tmp_path, capsys, muts, command):
    """The CLI on a corrupted trace: exit 0 (with at most a `trace cut` warning) or 2 with one line."""
    raw, _ = original
    path = put(tmp_path, readers_base.trace, mutate(raw, muts))
    status = main([str(path) if a == "{}" else a for a in command])
    err = capsys.readouterr().err.splitlines()
    assert status in (0, 2), err
    if status == 2:
        assert len(err) == 1 and err[0].startswith("crashcheck: error: "), err
    else:
        assert all(line.startswith("crashcheck: warning: ") and "trace cut" in line for line in err), err


# -- every length and count of the format, given hostile values ---------------------------------

def fields(raw: bytes) -> dict[str, list[tuple[int, int]]]:
    """(byte position, width) of every length and count the reader must check, by part: the
    header's fields, each site record's numbers and string lengths, each chunk's event count and
    payload length, each event's site id and size (docs/trace-format.md)."""
    out: dict[str, list[tuple[int, int]]] = {
        "header": [(8, 4), (12, 4), (16, 8), (24, 8), (32, 4), (36, 4), (44, 4), (48, 8), (56, 8)],
        "site": [], "chunk": [], "event": []}
    (version,) = struct.unpack_from("<I", raw, 8)
    (nsites,) = struct.unpack_from("<I", raw, 44)
    pos = 64
    for _ in range(nsites):
        out["site"] += [(pos + 4 * i, 4) for i in range(5)]
        pos += 20
        for _ in range(6 if version >= 4 else 5):     # version 4: the inline chain, a sixth string
            out["site"].append((pos, 2))
            pos += 2 + struct.unpack_from("<H", raw, pos)[0]
    for p, kind, _ in hostile.events(raw):
        if kind == -1:
            out["chunk"] += [(p + 4, 4), (p + 8, 8)]
        elif kind == 13:
            out["event"].append((p + 1, 2))           # a store8's site id
        else:
            out["event"] += [(p + 4, 4), (p + 14, 2)]  # site id, size
    return out


HOSTILE = st.sampled_from([0, 1, 7, 8, 0x7F, 0x80, 0xFF, 0x1000, 0x1001, 0xFFFF, 0x10000, 0x7FFFFFFF,
                           0xFFFFFFFF, 1 << 32, 1 << 47, 1 << 48, 1 << 62, (1 << 64) - 1])


@st.composite
def field_edits(draw, raw):
    where = fields(raw)
    data = bytearray(raw)
    for _ in range(draw(st.integers(1, 3))):
        # the part first, so that the few header fields are drawn as often as the many events'
        pos, width = draw(st.sampled_from(where[draw(st.sampled_from(sorted(where)))]))
        old = int.from_bytes(data[pos:pos + width], "little")
        value = draw(st.one_of(HOSTILE, st.integers(-3, 3).map(lambda d, o=old: o + d)))
        data[pos:pos + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
    cut = draw(st.one_of(st.none(), st.none(), st.none(), st.integers(0, len(data))))
    return bytes(data if cut is None else data[:cut])


def sane(trace: Trace) -> None:
    """What a trace the reader returns says, beyond `sound`: names a compiler could have written,
    and events naming sites of the table."""
    sound(trace)
    for site in trace.sites:
        assert len(site.file.encode()) <= 4096 and len(site.inlined_file.encode()) <= 4096
        for text in (site.file, site.func, site.inlined_file, site.inlined_func):
            assert not any(ord(c) < 32 or ord(c) == 127 for c in text)
    for e in trace.events:
        assert e.site == NO_SITE or 0 <= e.site < len(trace.sites)
    assert trace.pool_base + trace.pool_size <= ADDR_MASK + 1


@settings(FUZZ, max_examples=150, deadline=5000)
@given(data=st.data())
def test_hostile_field_values(readers_base, original, tmp_path, data):
    """Every length and count field, set to a hostile value (0, 2^16-1, 2^32-1, 2^64-1, off by a
    few ...) and the file maybe cut: a sane trace or one TraceError line, in seconds."""
    raw, _ = original
    path = put(tmp_path, readers_base.trace, data.draw(field_edits(raw)))
    try:
        trace = read_trace(path)
    except TraceError as exc:
        one_line(exc)
        return
    sane(trace)


@settings(FUZZ, max_examples=24, deadline=20000)
@given(data=st.data(), command=st.sampled_from(
    [["trace", "stats", "{}"], ["trace", "show", "{}"], ["states", "{}", "--limit", "1"]]))
def test_hostile_field_values_cli(readers_base, original, tmp_path, capsys, data, command):
    """The same through every subcommand that reads a trace: exit 0 or 2 with one line."""
    raw, _ = original
    path = put(tmp_path, readers_base.trace, data.draw(field_edits(raw)))
    status = main([str(path) if a == "{}" else a for a in command])
    err = capsys.readouterr().err.splitlines()
    assert status in (0, 2), err
    if status == 2:
        assert len(err) == 1 and err[0].startswith("crashcheck: error: ") and err[0].isprintable(), err
    else:
        assert all(line.startswith("crashcheck: warning: ") and "trace cut" in line for line in err), err


# -- JSON: bug records and results files --------------------------------------------------------

def paths(doc, prefix=()):
    """Every path (tuple of keys / indexes) into DOC, the root excepted."""
    out = []
    if isinstance(doc, dict):
        items = list(doc.items())
    elif isinstance(doc, list):
        items = list(enumerate(doc))
    else:
        return out
    for k, v in items:
        out.append(prefix + (k,))
        out.extend(paths(v, prefix + (k,)))
    return out


other_values = st.one_of(
    st.none(), st.booleans(), st.integers(-(1 << 70), 1 << 70), st.floats(allow_nan=False),
    st.text(max_size=8), st.just([]), st.just({}), st.lists(st.integers(-3, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2), st.just([[["a"]]]))


@st.composite
def json_edits(draw, doc):
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        where = paths(doc)
        if not where:
            break
        path = draw(st.sampled_from(where))
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        else:
            parent[path[-1]] = draw(other_values)
    return doc


@pytest.fixture(scope="module")
def docs(readers_base):
    return json.loads(readers_base.record.read_text()), json.loads(readers_base.results.read_text())


def test_json_edits_reach_every_field(docs):
    rec, res = docs
    assert len(paths(rec)) > 50 and len(paths(res)) > 200


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_corrupt_record(docs, data):
    rec = data.draw(json_edits(docs[0]))
    try:
        checked = record_formats.check_record(rec, "rec.json")
    except UsageError as exc:
        one_line(exc)
        return
    # a record that passes has every field the readers index, with its type
    assert isinstance(checked["history"], list) and all(isinstance(x, str) for x in checked["history"])
    assert isinstance(checked["crash"], dict) and all(isinstance(x, int) for x in checked["crash"]["choice"])
    render({"crashcheck": 1, "model": "adr", "strategy": "bounded", "seed": 0, "command": "",
            "structures": ["wort"], "stats": record_formats.STATS.check({}, ""), "per_structure": None,
            "bugs": [checked]})


@settings(FUZZ, max_examples=30)
@given(data=st.data())
def test_corrupt_results(docs, data):
    res = data.draw(json_edits(docs[1]))
    try:
        checked = record_formats.check_results(res, "results.json")
    except UsageError as exc:
        one_line(exc)
        return
    assert "<html" in render(checked).lower()


@settings(FUZZ, max_examples=20)
@given(data=st.data(), raw_edit=st.lists(mutation, max_size=2))
def test_corrupt_results_cli(docs, tmp_path, capsys, data, raw_edit):
    """`crashcheck report` end to end on a corrupted results file (JSON edits, then bytes)."""
    text = json.dumps(data.draw(json_edits(docs[1]))).encode()
    src = tmp_path / "results.json"
    src.write_bytes(mutate(text, raw_edit))
    status = main(["report", str(src), "-o", str(tmp_path / "out.html")])
    err = capsys.readouterr().err.splitlines()
    assert status in (0, 2)
    if status == 2:
        assert len(err) == 1 and err[0].startswith("crashcheck: error: "), err
    else:
        assert err == [] and (tmp_path / "out.html").exists()


@settings(FUZZ, max_examples=8)
@given(data=st.data())
def test_corrupt_record_replay_cli(readers_base, docs, tmp_path, capsys, data):
    """`crashcheck replay` on a few corrupted records: 1 (reproduced), 0 (not reproduced) only
    for a record whose crash and history survived the edit, or 2 with one line."""
    rec = data.draw(json_edits(docs[0]))
    src = tmp_path / "rec.json"
    src.write_text(json.dumps(rec))
    status = main(["replay", str(src)])
    captured = capsys.readouterr()
    err = captured.err.splitlines()
    assert status in (0, 1, 2), err
    if status == 2:
        assert len(err) == 1 and err[0].startswith("crashcheck: error: "), err
    else:
        assert err == []
        if status == 0:
            assert rec["history"] != docs[0]["history"] or rec["crash"] != docs[0]["crash"] \
                or rec.get("class") != docs[0]["class"] or rec.get("model") != docs[0]["model"], captured.out
