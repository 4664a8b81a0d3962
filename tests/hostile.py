"""Hostile inputs for the CLI's readers, as data: each case makes its files in a folder and names
the command line, the exit status and what the one stderr line must say.

Used by tests/e2e/test_hostile_inputs.py (in-process, every case) and by scripts that compare two
versions of crashcheck on the same cases. A case is `Case(cls, name, build)`, where
`build(work, base)` makes the case's files in WORK from BASE (real files: a trace with its region
image, a bug record, a results file) and returns `(argv, status, needle)`: the crashcheck arguments,
the exit status wanted, and a substring the single `crashcheck: error:` line must contain (for
status 0: a substring of the one warning line, or None for none).
"""
from __future__ import annotations

import json
import os
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

HEADER = 64
EVENT_HEAD = struct.Struct("<BBHIQ")
CHUNK = struct.Struct("<IIQ")
PAYLOAD_KINDS = {1, 2, 7, 9, 11}


@dataclass
class Base:
    """The real files a case starts from."""
    trace: Path          # a complete trace from a traced driver, with TRACE.region0 beside it
    record: Path         # a bug record from `crashcheck fuzz` (a crash inside an operation)
    results: Path        # the results file of that run


@dataclass
class Case:
    cls: str
    name: str
    build: Callable[[Path, Base], tuple[list[str], int, str | None]]

    @property
    def id(self) -> str:
        return f"{self.cls}:{self.name}"


# -- traces ------------------------------------------------------------------------------------

def events(raw: bytes) -> list[tuple[int, int, int]]:
    """(byte position, kind, payload length) of every event of a trace, and the chunk headers as
    kind -1, walked with the format of docs/trace-format.md."""
    (version, nsites) = struct.unpack_from("<I", raw, 8)[0], struct.unpack_from("<I", raw, 44)[0]
    pos = HEADER
    for _ in range(nsites):
        pos += 16 + (4 if version >= 3 else 0)        # version 3: a u32 of flags, a fifth string
        for _ in range(6 if version >= 4 else 5 if version >= 3 else 4):   # 4: the inline chain
            (n,) = struct.unpack_from("<H", raw, pos)
            pos += 2 + n
    out = []
    while pos < len(raw):
        _, nev, plen = CHUNK.unpack_from(raw, pos)
        out.append((pos, -1, plen))
        pos += CHUNK.size
        for _ in range(nev):
            kind = raw[pos]
            if kind == 13:
                out.append((pos, 13, 0))
                pos += 16
                continue
            (word,) = struct.unpack_from("<Q", raw, pos + 8)
            size = word >> 48
            elen = (size + 7) & ~7 if kind in PAYLOAD_KINDS else 0
            out.append((pos, kind, elen))
            pos += 16 + elen
    return out


def first(raw: bytes, kind: int) -> int:
    return next(p for p, k, _ in events(raw) if k == kind)


def copy_trace(work: Path, base: Base, raw: bytes | None = None) -> Path:
    """BASE's trace (or RAW) in WORK under the same name, with its image (the trace names it)."""
    dst = work / base.trace.name
    dst.write_bytes(base.trace.read_bytes() if raw is None else raw)
    shutil.copy(f"{base.trace}.region0", f"{dst}.region0")
    return dst


def rename_image(raw: bytes, new: bytes) -> bytes:
    """RAW with the region event's image name replaced by NEW (same length as the old)."""
    pos = first(raw, 11)
    (nlen,) = struct.unpack_from("<Q", raw, pos + 24)
    assert len(new) == nlen, (new, nlen)
    return raw[:pos + 32] + new + raw[pos + 32 + nlen:]


def patched(raw: bytes, pos: int, data: bytes) -> bytes:
    return raw[:pos] + data + raw[pos + len(data):]


def trace_case(name: str, needle: str | None, edit: Callable[[bytes], bytes] | None = None,
               cmd: tuple[str, ...] = ("trace", "stats"), status: int = 2,
               after: Callable[[Path], None] | None = None, path: Callable[[Path], str] | None = None) -> Case:
    def build(work: Path, base: Base):
        if path is not None:
            target = path(work)
        else:
            raw = base.trace.read_bytes()
            dst = copy_trace(work, base, edit(raw) if edit else raw)
            if after:
                after(dst)
            target = str(dst)
        return [*cmd, target], status, needle
    return Case("trace", name, build)


def _fifo(work: Path) -> str:
    os.mkfifo(work / "fifo")
    return str(work / "fifo")


def _dir(work: Path) -> str:
    (work / "folder").mkdir()
    return str(work / "folder")


def _image_fifo(dst: Path) -> None:
    img = Path(f"{dst}.region0")
    img.unlink()
    os.mkfifo(img)


def _set_u32(off: int, value: int) -> Callable[[bytes], bytes]:
    return lambda raw: patched(raw, off, struct.pack("<I", value))


def _event_field(kind: int, off: int, data: bytes) -> Callable[[bytes], bytes]:
    """Overwrite bytes OFF.. of the first event of KIND."""
    return lambda raw: patched(raw, first(raw, kind) + off, data)


def _size_field(kind: int, size: int) -> Callable[[bytes], bytes]:
    def edit(raw: bytes) -> bytes:
        pos = first(raw, kind)
        (word,) = struct.unpack_from("<Q", raw, pos + 8)
        return patched(raw, pos + 8, struct.pack("<Q", (word & ((1 << 48) - 1)) | size << 48))
    return edit


def _site_name_byte(raw: bytes) -> bytes:
    pos = HEADER + 16 + (4 if struct.unpack_from("<I", raw, 8)[0] >= 3 else 0)
    (n,) = struct.unpack_from("<H", raw, pos)
    assert n > 0
    return patched(raw, pos + 2, b"\xff")


def _long_site_file(raw: bytes) -> bytes:
    """The first site's file name made 65535 bytes of `a`: well formed, and no file's name."""
    pos = HEADER + 16 + (4 if struct.unpack_from("<I", raw, 8)[0] >= 3 else 0)
    (n,) = struct.unpack_from("<H", raw, pos)
    return raw[:pos] + struct.pack("<H", 0xFFFF) + b"a" * 0xFFFF + raw[pos + 2 + n:]


def _site_func_swallows(raw: bytes) -> bytes:
    """The first site's function name says 65535 bytes: it runs over the next records and events."""
    pos = HEADER + 16 + (4 if struct.unpack_from("<I", raw, 8)[0] >= 3 else 0)
    (n,) = struct.unpack_from("<H", raw, pos)
    return patched(raw, pos + 2 + n, struct.pack("<H", 0xFFFF)) + bytes(0x10000)


def _event_site(site: int) -> Callable[[bytes], bytes]:
    """The first fence names site SITE."""
    return lambda raw: patched(raw, first(raw, 4) + 4, struct.pack("<I", site))


def _chunk_fewer_events(raw: bytes) -> bytes:
    pos = first(raw, -1)
    return patched(raw, pos + 4, struct.pack("<I", 3))


def _last_chunk_count(count: int) -> Callable[[bytes], bytes]:
    """The chunk holding the end marker says COUNT events (reading stops at the marker)."""
    def edit(raw: bytes) -> bytes:
        pos = [p for p, k, _ in events(raw) if k == -1][-1]
        return patched(raw, pos + 4, struct.pack("<I", count))
    return edit


def _end_chunk_longer(raw: bytes) -> bytes:
    """The end marker's chunk says 8 more payload bytes than it has, and has them."""
    pos = [p for p, k, _ in events(raw) if k == -1][-1]
    _, nev, plen = CHUNK.unpack_from(raw, pos)
    return patched(raw, pos + 8, struct.pack("<Q", plen + 8)) + bytes(8)


def _store8_offset(raw: bytes) -> bytes:
    pos = first(raw, 13)
    (word,) = struct.unpack_from("<Q", raw, pos)
    return patched(raw, pos, struct.pack("<Q", (word & 0xFFFFFF) | ((1 << 40) - 1) << 24))


def _cut(raw: bytes) -> bytes:
    last = events(raw)[-2][0]            # inside the event before the end marker
    return raw[:last + 5]


TRACE_CASES = [
    trace_case("missing file", "no such trace file", path=lambda w: str(w / "absent")),
    trace_case("folder", "is a folder", path=_dir),
    trace_case("fifo", "not a regular file", path=_fifo),
    trace_case("/dev/zero", "not a regular file", path=lambda w: "/dev/zero"),
    trace_case("fifo (states)", "not a regular file", path=_fifo, cmd=("states",)),
    trace_case("empty", "bad magic", lambda raw: b""),
    trace_case("cut header", "truncated header", lambda raw: raw[:40]),
    trace_case("bad magic", "bad magic", lambda raw: b"X" + raw[1:]),
    trace_case("version 99", "unknown trace version 99", _set_u32(8, 99)),
    trace_case("line size 0", "corrupt header", _set_u32(32, 0)),
    trace_case("site count 2^32-1", "room for at most", _set_u32(44, 0xFFFFFFFF)),
    trace_case("site count +1", "site", lambda raw: patched(raw, 44, struct.pack(
        "<I", struct.unpack_from("<I", raw, 44)[0] + 1))),
    trace_case("non-UTF-8 site name", "not UTF-8", _site_name_byte),
    *(trace_case(f"site file name of 65535 bytes ({' '.join(cmd)})", "file name of site 0 is 65535 bytes long",
                 _long_site_file, cmd=cmd)
      for cmd in (("trace", "show"), ("trace", "stats"), ("states",))),
    trace_case("site function name running over the events", "function name of site 0", _site_func_swallows),
    trace_case("site flags 0x80", "site 0 has flags 0x80", lambda raw: patched(
        raw, HEADER + 16, struct.pack("<I", 0x80))),
    trace_case("event names a site past the table", "names site 1000000, the site table has",
               _event_site(1_000_000), cmd=("trace", "show")),
    trace_case("header flags 0x10", "corrupt header (flags 0x10", _set_u32(36, 0x10)),
    trace_case("header reserved byte", "reserved bytes not zero", lambda raw: patched(raw, 60, b"\x01")),
    trace_case("pool past 2^48", "not a range of user addresses", lambda raw: patched(
        raw, 24, struct.pack("<Q", 1 << 62))),
    trace_case("unknown kind", "no event kind", lambda raw: patched(raw, first(raw, 5), b"\x63")),
    trace_case("event past its chunk", "runs past its chunk", _size_field(11, 0xFFF0)),
    trace_case("chunk says fewer events", "events end at byte", _chunk_fewer_events),
    *(trace_case(f"end chunk says 2^32-1 events ({' '.join(cmd)})", "its end marker is event",
                 _last_chunk_count(0xFFFFFFFF), cmd=cmd)
      for cmd in (("trace", "show"), ("trace", "stats"), ("states",))),
    trace_case("end chunk says 2 events", "its end marker is event", _last_chunk_count(2)),
    trace_case("bytes after the end marker", "end marker ends at byte", _end_chunk_longer),
    trace_case("bad chunk magic", "bad chunk magic", lambda raw: patched(raw, first(raw, -1), b"XXXX")),
    trace_case("region name length 2^40", "names an image of", _event_field(11, 24, struct.pack("<Q", 1 << 40))),
    trace_case("region payload too short", "less than its 16-byte head", _size_field(11, 8)),
    trace_case("region name not UTF-8", "not UTF-8", lambda raw: rename_image(
        raw, b"\xff" + b"x" * (struct.unpack_from("<Q", raw, first(raw, 11) + 24)[0] - 1))),
    trace_case("region name ../", "not a file name in the trace's folder", lambda raw: rename_image(
        raw, b"../" + b"x" * (struct.unpack_from("<Q", raw, first(raw, 11) + 24)[0] - 3))),
    trace_case("region name with newline", "not a file name", lambda raw: rename_image(
        raw, b"a\n" + b"x" * (struct.unpack_from("<Q", raw, first(raw, 11) + 24)[0] - 2))),
    trace_case("region size 0", "not a range of user addresses", _event_field(11, 16, struct.pack("<Q", 0))),
    trace_case("region size 2^63", "not a range of user addresses",
               _event_field(11, 16, struct.pack("<Q", 1 << 63))),
    trace_case("region index 7", "expected region 0", _event_field(11, 1, b"\x07")),
    trace_case("store8 out of region", "outside region 0", _store8_offset),
    trace_case("alloc payload 0", "not 8", _size_field(7, 0)),
    trace_case("image missing", "is missing", after=lambda d: Path(f"{d}.region0").unlink()),
    trace_case("image short", "has 100 bytes", after=lambda d: os.truncate(f"{d}.region0", 100)),
    trace_case("image short (states)", "has 100 bytes", cmd=("states",),
               after=lambda d: os.truncate(f"{d}.region0", 100)),
    trace_case("image is a fifo (states)", "not a regular file", cmd=("states",), after=_image_fifo),
    trace_case("image is a folder (show)", "not a regular file", cmd=("trace", "show"),
               after=lambda d: (Path(f"{d}.region0").unlink(), Path(f"{d}.region0").mkdir())),
    trace_case("newline in the file name", "no such trace file",
               path=lambda w: str(w / "bad\nname")),
    trace_case("cut tail (a clean cut)", "trace cut", _cut, status=0),
    trace_case("cut tail (states)", "trace cut", _cut, cmd=("states",), status=0),
]


# -- bug records -------------------------------------------------------------------------------

def _write(work: Path, name: str, data) -> str:
    path = work / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data))
    return str(path)


def record_case(name: str, needle: str, edit: Callable[[dict], object] | None = None,
                raw: Callable[[Path, Base], str] | None = None, extra: tuple[str, ...] = (),
                status: int = 2) -> Case:
    def build(work: Path, base: Base):
        if raw is not None:
            path = raw(work, base)
        else:
            rec = json.loads(base.record.read_text())
            out = edit(rec)
            path = _write(work, "rec.json", rec if out is None else out)
        return ["replay", path, *extra], status, needle
    return Case("record", name, build)


def _set(path: str, value):
    """An edit setting the field at PATH (dots; numbers index lists) to VALUE; deletes it for DROP."""
    def edit(doc):
        parts = path.split(".")
        obj = doc
        for p in parts[:-1]:
            obj = obj[int(p)] if isinstance(obj, list) else obj[p]
        last = parts[-1]
        if value is DROP:
            del obj[last]
        elif isinstance(obj, list):
            obj[int(last)] = value
        else:
            obj[last] = value
    return edit


DROP = object()


def _choice_plus(rec):
    rec["crash"]["choice"] = rec["crash"]["choice"] + [0]


def _choice_big(rec):
    assert rec["crash"]["choice"], "the base record needs a crash with pending stores"
    rec["crash"]["choice"][0] = 1000


RECORD_CASES = [
    record_case("missing file", "no such bug record", raw=lambda w, b: str(w / "absent.json")),
    record_case("folder", "is a folder", raw=lambda w, b: _dir(w)),
    record_case("fifo", "not a regular file", raw=lambda w, b: _fifo(w)),
    record_case("/dev/zero", "not a regular file", raw=lambda w, b: "/dev/zero"),
    record_case("binary file", "not UTF-8", raw=lambda w, b: _write(w, "r.json", b"\x89PNG\r\n\x1a\n\xff\xfe")),
    record_case("bad JSON", "bad JSON", raw=lambda w, b: _write(w, "r.json", "{\"id\": ")),
    record_case("a list", "the file holds a list of 1, not an object", lambda r: [r]),
    record_case("null", "not an object", raw=lambda w, b: _write(w, "r.json", "null")),
    record_case("no history", "history is missing", _set("history", DROP)),
    record_case("history a string", "history must be a list", _set("history", "insert 1 1")),
    record_case("history of numbers", "history[0] must be a text", _set("history", [1, 2])),
    record_case("crash a list", "crash must be an object", _set("crash", [1, 2])),
    record_case("crash null", "crash must be an object", _set("crash", None)),
    record_case("crash without index", "crash.index is missing", _set("crash.index", DROP)),
    record_case("choice of texts", "crash.choice[0] must be a whole number", _set("crash.choice", ["a"])),
    record_case("choice a dict", "crash.choice must be a list, not an object", _set("crash.choice", {"a": 1})),
    record_case("negative index", "crash.index must be a whole number", _set("crash.index", -1)),
    record_case("index 10^30", "crash.index must be a whole number", _set("crash.index", 10 ** 30)),
    record_case("index 10^6", "no crash point 1000000", _set("crash.index", 10 ** 6)),
    record_case("crash event moved", "is now the", lambda r: r["crash"].__setitem__("event", r["crash"]["event"] + 1)),
    record_case("one choice too many", "does not replay as recorded", _choice_plus),
    record_case("choice out of range", "choice 0 is 1000", _choice_big),
    record_case("unknown model", "model must be one of adr, eadr", _set("model", "tso")),
    record_case("unknown strategy", "strategy must be one of", _set("strategy", "all")),
    record_case("unknown class", "class must be one of", _set("class", "bad-luck")),
    record_case("unknown structure", "unknown structure 'nope'", _set("structure", "nope")),
    record_case("unknown bug", "has no seeded bug 'nope'", _set("bug", "nope")),
    record_case("format 2", "format 2", _set("crashcheck", 2)),
    record_case("unversioned (old record)", "does not replay as recorded",
                lambda r: (_set("crashcheck", DROP)(r), _choice_plus(r)) and None),
    record_case("NaN", "NaN is not a JSON number",
                raw=lambda w, b: _write(w, "r.json", b.record.read_text().replace('"seed": ', '"seed": NaN, "x": ', 1))),
    record_case("deep nesting", "nested too deeply", raw=lambda w, b: _write(w, "r.json", "[" * 100000 + "]" * 100000)),
    record_case("10000-digit number", "digits",
                raw=lambda w, b: _write(w, "r.json", b.record.read_text().replace('"seed": ', '"seed": 1' + "0" * 10000 + ', "x": ', 1))),
    record_case("load past the history", "load (1000) is longer than the history", _set("load", 1000)),
    record_case("garbage history line", "bad history line 0", _set("history.0", "frobnicate 1")),
    record_case("empty history line", "bad history line 0 '' (too few fields)", _set("history.0", "")),
    record_case("key past 64 bits", "bad history line 0", _set("history.0", "insert 99999999999999999999999 1")),
    record_case("value of 3 bytes", "takes values of", _set("history.0", "insert 1 x:aabbcc")),
    record_case("results: no such --id", "no bug 'nope'",
                raw=lambda w, b: str(b.results), extra=("--id", "nope")),
    record_case("results: several bugs, no --id", "choose one with --id", raw=lambda w, b: str(b.results)),
]


# -- results files (report) --------------------------------------------------------------------

def report_case(name: str, needle: str, edit: Callable[[dict], object] | None = None,
                out: Callable[[Path, str], str] | None = None, raw: Callable[[Path, Base], str] | None = None,
                status: int = 2) -> Case:
    def build(work: Path, base: Base):
        if raw is not None:
            path = raw(work, base)
        else:
            res = json.loads(base.results.read_text())
            changed = edit(res) if edit else None
            path = _write(work, "results.json", res if changed is None else changed)
        output = out(work, path) if out else str(work / "report.html")
        return ["report", path, "-o", output], status, needle
    return Case("results", name, build)


def _hardlink(work: Path, path: str) -> str:
    os.link(path, work / "hard.json")
    return str(work / "hard.json")


def _symlink(work: Path, path: str) -> str:
    os.symlink(path, work / "link.html")
    return str(work / "link.html")


RESULTS_CASES = [
    report_case("missing file", "no such results file", raw=lambda w, b: str(w / "absent.json")),
    report_case("/dev/zero", "not a regular file", raw=lambda w, b: "/dev/zero"),
    report_case("binary file", "not UTF-8", raw=lambda w, b: _write(w, "r.json", b"\x00\xff" * 64)),
    report_case("a list", "not an object", lambda r: [r]),
    report_case("no stats", "stats is missing", _set("stats", DROP)),
    report_case("stats a list", "stats must be an object", _set("stats", [1])),
    report_case("elapsed a text", "stats.elapsed_s must be a number", _set("stats.elapsed_s", "x")),
    report_case("bugs a dict", "bugs must be a list", _set("bugs", {})),
    report_case("bug null", "bugs[0] must be an object", _set("bugs.0", None)),
    report_case("lost a text", "bugs[0].lost must be a list", _set("bugs.0.lost", "x")),
    report_case("timeline entry null", "bugs[0].timeline[0] must be an object", _set("bugs.0.timeline.0", None)),
    report_case("sources garbage", "bugs[0].sources", _set("bugs.0.sources", {"a": [1]})),
    report_case("actual pairs of 3", "bugs[0].actual[0] must be a list of 2, not a list of 3", _set("bugs.0.actual", [["1", "2", "3"]])),
    report_case("offset a text", "bugs[0].lost[0].off", lambda r: r["bugs"][0].__setitem__(
        "lost", [{"seq": 1, "off": "0x40", "size": 8}])),
    report_case("per_structure stats null", "per_structure[0].stats must be an object",
                _set("per_structure.0.stats", None)),
    report_case("format 2", "format 2", _set("crashcheck", 2)),
    report_case("no format field", "no \"crashcheck\" format field", _set("crashcheck", DROP)),
    report_case("huge count", "stats.histories must be a whole number", _set("stats.histories", 10 ** 40)),
    report_case("output is the input", "is the results file itself", out=lambda w, p: p),
    report_case("output via symlink", "is the results file itself",
                out=lambda w, p: (os.symlink(p, w / "link.json"), str(w / "link.json"))[1]),
    report_case("output via hard link", "is the results file itself", out=_hardlink),
    report_case("output via relative path", "is the results file itself",
                out=lambda w, p: os.path.relpath(p)),
    report_case("output folder missing", "does not exist", out=lambda w, p: str(w / "nope" / "r.html")),
    report_case("output is a folder", "is a folder", out=lambda w, p: _dir(w)),
]


# -- catalogs (user structures under CRASHCHECK_BUILD) -----------------------------------------

def catalog_case(name: str, needle: str, meta=None, bugs=None, expect=None) -> Case:
    """A user structure `broken` whose meta.json / bugs.json / expect.json are the given text
    (None: a good default); the command is `fuzz broken`; tests also run `list`."""
    def build(work: Path, base: Base):
        folder = work / "src"
        folder.mkdir(exist_ok=True)
        user = work / "build" / "user" / "broken"
        user.mkdir(parents=True, exist_ok=True)
        good = json.dumps({"name": "broken", "folder": str(folder), "bugs": str(folder / "bugs.json")})
        if isinstance(meta, bytes):
            (user / "meta.json").write_bytes(meta)
        else:
            (user / "meta.json").write_text(good if meta is None else meta)
        (folder / "bugs.json").write_text('[{"name": "b", "define": "B", "class": "leak"}]' if bugs is None else bugs)
        if expect is not None:
            (folder / "expect.json").write_text(expect)
        return ["fuzz", "broken", "--examples", "1"], 2, needle
    return Case("catalog", name, build)


CATALOG_CASES = [
    catalog_case("meta bad JSON", "bad JSON", meta="{"),
    catalog_case("meta a list", "must be an object", meta="[]"),
    catalog_case("meta folder a number", "folder must be a text", meta='{"folder": 3}'),
    catalog_case("meta binary", "not UTF-8", meta=b"{\"folder\": \"\xff\"}"),
    catalog_case("bugs bad JSON", "bad JSON", bugs="[{"),
    catalog_case("bugs an object", "must be a list", bugs='{"name": "b"}'),
    catalog_case("bug without define", "[0].define is missing", bugs='[{"name": "b", "class": "leak"}]'),
    catalog_case("bug without name", "[0].name is missing", bugs='[{"define": "B", "class": "leak"}]'),
    catalog_case("bug without class", "[0].class is missing", bugs='[{"name": "b", "define": "B"}]'),
    catalog_case("unknown class", "[0].class must be one of", bugs='[{"name": "b", "define": "B", "class": "oops"}]'),
    catalog_case("duplicate names", "two seeded bugs are named 'b'",
                 bugs='[{"name": "b", "define": "B", "class": "leak"}, {"name": "b", "define": "C", "class": "leak"}]'),
    catalog_case("bug name of 300 characters", "is not a name",
                 bugs='[{"name": "%s", "define": "B", "class": "leak"}]' % ("b" * 300)),
    catalog_case("bug name with a slash", "is not a name",
                 bugs='[{"name": "../x", "define": "B", "class": "leak"}]'),
    catalog_case("define with a space", "is not a C macro name",
                 bugs='[{"name": "b", "define": "B -DX", "class": "leak"}]'),
    # many-bug variants (docs/trees.md "Many bugs at once"): an entry naming other entries
    *[catalog_case(name, needle, bugs='[{"name": "b", "define": "B", "class": "leak"}, %s]' % entries)
      for name, needle, entries in [
          ("many naming an unknown bug", "[1].bugs: 'c' is not a seeded bug of this catalog",
           '{"name": "many", "bugs": ["c"]}'),
          ("many naming a many", "[2].bugs: 'many' is not a seeded bug",
           '{"name": "many", "bugs": ["b"]}, {"name": "more", "bugs": ["many"]}'),
          ("many naming nothing", "[1].bugs names no seeded bug", '{"name": "many", "bugs": []}'),
          ("many naming a bug twice", "[1].bugs names a seeded bug twice", '{"name": "many", "bugs": ["b", "b"]}'),
          ("many of another class", "[1].class must be one of many",
           '{"name": "many", "bugs": ["b"], "class": "leak"}'),
          ("many bugs a text", "[1].bugs must be a list", '{"name": "many", "bugs": "b"}')]],
    catalog_case("expect known a text", "known must be a list", expect='{"known": "x"}'),
    catalog_case("expect a list", "must be an object", expect="[]"),
]


# -- numeric options ---------------------------------------------------------------------------

def option_case(name: str, needle: str, argv: Callable[[Base], list[str]]) -> Case:
    return Case("options", name, lambda work, base: (argv(base), 2, needle))


OPTION_CASES = [
    option_case("trace stats --top -1", "--top: must be at least 1, not -1",
                lambda b: ["trace", "stats", str(b.trace), "--top", "-1"]),
    option_case("trace stats --top 0", "--top: must be at least 1, not 0",
                lambda b: ["trace", "stats", str(b.trace), "--top", "0"]),
    option_case("trace stats --top nan", "--top: not a whole number: 'nan'",
                lambda b: ["trace", "stats", str(b.trace), "--top", "nan"]),
    option_case("states --limit 0", "--limit: must be at least 1", lambda b: ["states", str(b.trace), "--limit", "0"]),
    option_case("states --limit -5", "--limit: must be at least 1", lambda b: ["states", str(b.trace), "--limit", "-5"]),
    option_case("states --seed -1", "--seed: must be between 0 and 2^64-1", lambda b: ["states", str(b.trace), "--seed", "-1"]),
    option_case("states --line-size 0", "--line-size: must be at least 1",
                lambda b: ["states", str(b.trace), "--line-size", "0"]),
    option_case("states --line-size 48", "must be a power of two, not 48",
                lambda b: ["states", str(b.trace), "--line-size", "48"]),
    option_case("states --atomic-unit 3", "must be a power of two, not 3",
                lambda b: ["states", str(b.trace), "--atomic-unit", "3"]),
    option_case("states --atomic-unit inf", "--atomic-unit: not a whole number",
                lambda b: ["states", str(b.trace), "--atomic-unit", "inf"]),
    option_case("stats --ops 0", "--ops: must be at least 1", lambda b: ["stats", "wort", "--ops", "0"]),
    option_case("stats --ops -5", "--ops: must be at least 1", lambda b: ["stats", "wort", "--ops", "-5"]),
    option_case("stats --seed nan", "--seed: not a whole number", lambda b: ["stats", "wort", "--seed", "nan"]),
]

ALL_CASES = TRACE_CASES + RECORD_CASES + RESULTS_CASES + CATALOG_CASES + OPTION_CASES
