"""pmemcheck store logs -> crashcheck traces.

Owns: reading the store log that Valgrind's pmemcheck writes with `--log-stores=yes` (with or
without `--log-stores-stacktraces=yes`) and writing it as a trace through TraceWriter. Never
changes the trace format or interprets events beyond the mapping below (docs/pmemcheck.md).

The log
  Valgrind lines start with a prefix `==PID== `. The store log is the text from the entry `START`
  to the entry `STOP`, entries separated by `|` (in practice all on one line):

    STORE;ADDR;VALUE;SIZE[;FRAME...]   VALUE a little-endian number of SIZE (<= 8) bytes; each FRAME
                                       is `0xPC: func (file:line)` or `0xPC: func (in object)`,
                                       several of them glued together for inlined calls
    FLUSH;ADDR;SIZE                    a clflush/clflushopt/clwb of the line holding ADDR (SIZE 64),
                                       or the range [ADDR, ADDR+SIZE) of a client request (libpmem's
                                       msync path flushes whole pages this way)
    FENCE                              sfence, mfence, and the fence pmemcheck implies after clflush
    REGISTER_FILE;PATH;ADDR;SIZE;OFF   a PM file mapping (VALGRIND_PMC_REGISTER_PMEM_FILE)
    anything else                      the text of a VALGRIND_PMC_EMIT_LOG client request

Mapping
  STORE -> store (plain; pmemcheck marks neither NT stores nor locked ones), FLUSH -> one `clwb`
  flush per cache line of the range inside PM, FENCE -> sfence, `op_begin N` / `op_end N` (and the
  pmreorder spelling `op.N.BEGIN` / `op.N.END` that the exporter writes) -> op_begin / op_end,
  `region 0xADDR SIZE` (a PM range crashcheck_register_pm registered, which pmemcheck tracks but
  does not log) -> a region (its initial image all zero, or from `images`),
  `alloc 0xADDR SIZE` / `free 0xADDR`, each optionally followed by ` site FILE:LINE:COL FUNC` and
  ` inlined FILE:LINE:COL FUNC` (what crashcheck's runtime emits for crashcheck_alloc/free under
  Valgrind, instrument/runtime/rt_valgrind.c) -> alloc / free at that site, other EMIT_LOG text
  -> mark. The first REGISTER_FILE is region 0 (the pool); a mapping of a part of a
  file that is already mapped (libpmemobj maps the pool header a second time) is folded onto that
  region, so its stores land in the pool's bytes; an identical registration is ignored. Fences
  before the first registration (the process start-up) are dropped. Stack traces become sites:
  the innermost frame with a source line outside PMDK's libraries, the C library and the loader
  (a store libpmem makes is named by the user's call, given a deep enough stack), the outermost
  function inlined at that frame as its inlined-at caller.

Initial images: the log does not record the content of a registered file. Without `images`, each
region starts all zero (right for a pool the program created); with them, region N starts as
bytes [OFF, OFF+SIZE) of images[N].
"""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .trace import NO_SITE, TraceError
from .trace_writer import TraceWriter

LINE = 64
MAX_STORE = 8        # pmemcheck logs a value as one machine word: wider stores come split
_PREFIX = re.compile(r"(?:==|\*\*|--)(\d+|PID)(?:==|\*\*|--) ?")
# A message Valgrind prints on its own while the store log is half-way through a line lands in
# that line, glued to the end of an entry (the message's own next lines, which carry the prefix,
# are skipped like any message): the one seen in practice, when the heap cannot grow by brk (a
# program mapping several libpmemobj pools).
_GLUED = re.compile(r"brk segment overflow in thread #\d+: can't grow to 0x[0-9a-fA-F]+(?=\||$)")
_OP = re.compile(r"op_(begin|end) (\d+)|op\.(\d+)\.(BEGIN|END)")
_REGION = re.compile(r"region (0x[0-9a-fA-F]+) (\d+)")
_OBJ = re.compile(r"(?:alloc (0x[0-9a-fA-F]+) (\d+)|free (0x[0-9a-fA-F]+))"
                  r"(?: site (\S+):(\d+):(\d+) (\S+)(?: inlined (\S+):(\d+):(\d+) (\S+))?)?")
_UNKNOWN = re.compile(r"[A-Z][A-Z_]*;")
_DESC_START = re.compile(r"(?=0x[0-9A-Fa-f]+: )")
_DESC = re.compile(r"0x[0-9A-Fa-f]+: (.*)", re.S)
_LIBRARY_OBJ = re.compile(r"(?:^|/)(?:libpmem|libpmem2|libpmemobj|libc|libpthread|ld-linux[^/]*|vgpreload_[^/]*)"
                          r"(?:[.-][^/]*)?$")
_LIBRARY_SRC = re.compile(r"(?:^|/)(?:libpmem|libpmem2|libpmemobj)/|(?:^|/)sysdeps/")


@dataclass
class Mapping:
    """One REGISTER_FILE (or --region) as placed in the trace: addresses [base, base+size) of the
    log become [base+delta, ...) of region `region`."""
    path: str
    base: int
    size: int
    offset: int
    region: int
    delta: int = 0
    line: int = 0          # log line of the registration (0: given on the command line)


@dataclass
class ImportResult:
    """What an import did, for the summary the CLI prints."""
    trace: Path
    counts: Counter = field(default_factory=Counter)        # events written, per kind
    entries: Counter = field(default_factory=Counter)       # log entries read, per kind
    regions: list[Mapping] = field(default_factory=list)    # one per trace region
    folded: list[Mapping] = field(default_factory=list)     # aliases folded onto a region
    images: list[str] = field(default_factory=list)         # per region: "zero" or the file given
    startup_fences: int = 0
    outside_flush_lines: int = 0
    skipped_lines: list[int] = field(default_factory=list)
    complete: bool = True
    sites: int = 0
    pid: int = 0


class _Fail(Exception):
    """A problem with one entry; import_log adds the place."""


def _num(text: str, what: str) -> int:
    try:
        if not text.startswith(("0x", "0X")):
            raise ValueError
        return int(text, 16)
    except ValueError:
        raise _Fail(f"bad number {text!r} ({what})") from None


def _parse_desc(desc: str) -> tuple[str, str, int, str]:
    """(function, file, line, object) of one Valgrind IP description."""
    m = _DESC.match(desc)
    if not m:
        raise _Fail(f"bad stack frame {desc[:60]!r} (expected '0xPC: function (file:line)')")
    rest = m.group(1).rstrip()
    func, file, line, obj = rest, "", 0, ""
    if rest.endswith(")") and " (" in rest:
        func, loc = rest[:-1].rsplit(" (", 1)
        if loc.startswith("in "):
            obj = loc[3:]
        else:
            name, _, num = loc.rpartition(":")
            if name and num.isdigit():
                # Valgrind joins the compilation folder and a source name that is already absolute
                # with "//" (/build//src/a.c, a file compiled by its absolute path): the name after
                # the last "//" is the file's own absolute path
                if "//" in name:
                    name = name[name.rindex("//") + 1:]
                file, line = name, int(num)
            else:
                func = rest
    return ("" if func == "???" else func), file, line, obj


class _Sites:
    """Site ids for stack traces, one per distinct stack text."""

    def __init__(self, writer: TraceWriter) -> None:
        self.writer = writer
        self.by_stack: dict[tuple[str, ...], int] = {}
        self.by_key: dict[tuple, int] = {}

    def get(self, frames: list[str]) -> int:
        key = tuple(frames)
        sid = self.by_stack.get(key)
        if sid is None:
            sid = self.by_stack[key] = self._make(frames)
        return sid

    def site(self, file: str, line: int, column: int, func: str, ifile: str, iline: int, icolumn: int,
             ifunc: str) -> int:
        """The id of a site given by its parts (an object marker's)."""
        key = (file, line, column, func, ifile, iline, icolumn, ifunc)
        sid = self.by_key.get(key)
        if sid is None:
            sid = self.by_key[key] = self.writer.site(file, line, func, column, ifile, iline, icolumn, ifunc)
        return sid

    def _make(self, frames: list[str]) -> int:
        parsed = []
        for frame in frames:
            descs = [d for d in _DESC_START.split(frame) if d]
            if not descs:
                raise _Fail(f"empty stack frame in {';'.join(frames)[:60]!r}")
            parsed.append([_parse_desc(d) for d in descs])
        # the innermost frame with a line outside the libraries (the user's call of libpmem that
        # made the store), else the innermost with a line, else the first outside them
        chosen = next((f for f in parsed if f[0][2] and not _library(f[0])), None) \
            or next((f for f in parsed if f[0][2]), None) \
            or next((f for f in parsed if not _library(f[0])), parsed[0])
        func, file, line, obj = chosen[0]
        ifunc = ifile = ""
        iline = 0
        if len(chosen) > 1:                    # an inlined chain at one PC: outermost caller last
            ifunc, ifile, iline, _ = chosen[-1]
        key = (file or obj, line, func, ifile, iline, ifunc)
        sid = self.by_key.get(key)
        if sid is None:
            sid = self.by_key[key] = self.writer.site(file or obj, line, func, inlined_file=ifile,
                                                      inlined_line=iline, inlined_func=ifunc)
        return sid


def _library(desc: tuple[str, str, int, str]) -> bool:
    """A frame (function, file, line, object) inside PMDK's libraries, the C library, the loader or
    Valgrind's preload: never a store's site while a deeper frame is the user's."""
    return bool(_LIBRARY_OBJ.search(desc[3]) or _LIBRARY_SRC.search(desc[1]))


def _read_image(path: str, offset: int, size: int) -> bytes:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            data = f.read(size)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read the initial image: {exc.strerror}") from None
    return data + bytes(size - len(data))


def import_log(log: str | os.PathLike, out: str | os.PathLike, *, images: list[str] = (),
               regions: list[tuple[int, int]] = (), spare_images: bool = False,
               files: dict[str, str] | None = None) -> ImportResult:
    """Read pmemcheck store log LOG and write it as trace OUT (plus OUT.regionN images).

    images   initial content per region, in region order (files; the registered offset applies);
             more images than regions is an error, unless SPARE_IMAGES (a run may not map every
             region it was given)
    regions  (address, size) of PM mappings the log does not name (VALGRIND_PMC_REGISTER_PMEM_MAPPING
             is not logged); they become the first regions, before any REGISTER_FILE
    files    a registered file's path -> a copy of its content before the run: the initial image of
             a region `images` does not give (a pool that existed before the run)
    Raises TraceError with `LOG:LINE: ...` for a log it cannot read."""
    log = Path(log)
    try:
        text = log.read_text(errors="replace")
    except FileNotFoundError:
        raise TraceError(f"{log}: no such log file") from None
    except IsADirectoryError:
        raise TraceError(f"{log}: is a folder, not a pmemcheck log") from None
    res = ImportResult(Path(out))
    imp = _Importer(res, list(images), files or {})
    for base, size in regions:
        imp.register("", base, size, 0, 0)

    started = stopped = False
    pid_seen = None
    lineno = 0
    for lineno, raw in enumerate(text.split("\n"), 1):
        m = _PREFIX.match(raw)
        body = raw[m.end():] if m else raw
        if m and m.group(1) != "PID":
            if pid_seen is None:
                pid_seen = m.group(1)
            elif m.group(1) != pid_seen and started and not stopped:
                raise TraceError(f"{log}:{lineno}: a second process ({m.group(1)}, after {pid_seen}) "
                                 "writes into the store log; run pmemcheck with --log-file=NAME.%p")
        if stopped:
            continue
        glued = _GLUED.search(body)
        if glued and glued.start() > 0:
            body = body[:glued.start()] + body[glued.end():]
            res.skipped_lines.append(lineno)
        if not started:
            if not body.startswith("START"):
                continue
            started = True
            parts = body.split("|")
            if parts[0] != "START":
                raise TraceError(f"{log}:{lineno}: the store log starts with {parts[0][:40]!r}, "
                                 "not START")
            first = 1
        else:
            parts = body.split("|")
            if parts[0]:                       # not an entry: a Valgrind message in the middle
                if body.strip():
                    res.skipped_lines.append(lineno)
                continue
            first = 1
        k = first
        try:
            for k in range(first, len(parts)):
                if imp.entry(parts[k]):
                    stopped = True
                    break
        except _Fail as exc:
            entry = parts[k] if len(parts[k]) <= 70 else parts[k][:67] + "..."
            raise TraceError(f"{log}:{lineno}: entry {k} {entry!r}: {exc}") from None
    if not started:
        raise TraceError(f"{log}: no store log (no START entry): run pmemcheck with --log-stores=yes")
    if imp.writer is None:
        raise TraceError(f"{log}: no PM region: the log has no REGISTER_FILE entry (a mapping "
                         "registered with VALGRIND_PMC_REGISTER_PMEM_MAPPING is not logged: give it "
                         "with --region ADDR:SIZE)")
    if imp.images_left() and not spare_images:
        raise TraceError(f"{len(images)} initial images given for {len(res.regions)} regions")
    res.complete = stopped
    res.pid = int(pid_seen) if pid_seen else 0
    imp.writer.pid = res.pid
    try:
        imp.writer.write(out, complete=stopped)
    except OSError as exc:
        raise TraceError(f"{out}: cannot write the trace: {exc.strerror}") from None
    res.sites = len(imp.writer.sites)
    return res


class _Importer:
    """The state of one import: regions, the writer (made at the first registration), sites."""

    def __init__(self, res: ImportResult, images: list[str], files: dict[str, str]) -> None:
        self.res = res
        self.images = images
        self.files = {os.path.realpath(k): v for k, v in files.items()}
        self.writer: TraceWriter | None = None
        self.sites: _Sites | None = None
        self.maps: list[Mapping] = []          # every mapping, folded ones included
        self.last: Mapping | None = None       # the mapping of the previous store (a cache)
        self.before: list[tuple[str, int]] = []   # op markers and marks before any region
        self.touched: set[int] = set()            # regions an event used an address of

    def images_left(self) -> bool:
        return len(self.images) > len(self.res.regions)

    # -- regions ---------------------------------------------------------------------------

    def register(self, path: str, base: int, size: int, offset: int, line: int) -> None:
        for m in self.maps:
            if (m.path, m.base, m.size, m.offset) == (path, base, size, offset):
                return                                           # registered again: no change
            if not path and (m.base, m.size) == (base, size):
                return      # the runtime's `region` marker for a file mapping the log has already
        if self._widen(path, base, size, offset, line):
            return
        overlapped = [m for m in self.maps if base < m.base + m.size and m.base < base + size]
        if overlapped and all(any(m is f for f in self.res.folded) for m in overlapped):
            # Only second views of files mapped elsewhere lie there (libpmemobj maps a pool's
            # 4 KiB header again on its own, and the next pool's header lands at the same
            # address once it is unmapped): the log has no munmap, but a new mapping at an
            # address means the old one is gone. Their files stay regions at their own bases.
            self.maps = [m for m in self.maps if not any(m is o for o in overlapped)]
            self.last = None
        for m in self.maps:
            if base < m.base + m.size and m.base < base + size:
                raise _Fail(f"overlaps the mapping of {m.path or 'a region'} at {m.base:#x} "
                            f"(size {m.size:#x}); a remapped address is not supported")
        for m in self.res.regions:                               # a part of a file already mapped
            if path and m.path == path and m.offset <= offset and offset + size <= m.offset + m.size:
                alias = Mapping(path, base, size, offset, m.region, m.base + (offset - m.offset) - base,
                                line)
                self.maps.append(alias)
                self.res.folded.append(alias)
                return
        index = len(self.res.regions)
        if size == 0 or size >= 1 << 48:
            raise _Fail(f"bad region size {size:#x}")
        given = self._given(index, path)
        image = _read_image(given, offset, size) if given else None
        self.res.images.append(given or "zero")
        mapping = Mapping(path, base, size, offset, index, 0, line)
        if self.writer is None:
            self.writer = TraceWriter(pool_base=base, pool_size=size, image=image)
            self.sites = _Sites(self.writer)
            for kind, value in self.before:
                self._marker(kind, value)
            self.before.clear()
        else:
            self.writer.region(base, size, image, absolute=True)
        self.maps.append(mapping)
        self.res.regions.append(mapping)

    def _given(self, index: int, path: str) -> str | None:
        """The file holding region INDEX's content before the run (registered from PATH), if any."""
        if index < len(self.images):
            return self.images[index]
        return self.files.get(os.path.realpath(path)) if path else None

    def _widen(self, path: str, base: int, size: int, offset: int, line: int) -> bool:
        """A mapping of more of a region's file than the region, before any event used an
        address of that region (libpmemobj's pmemobj_open maps the 4 KiB header, then the whole
        pool): it becomes the region, and the first mapping an alias of its part."""
        if self.writer is None:
            return False
        for index, first in enumerate(self.res.regions):
            if (index not in self.touched and path and path == first.path and offset <= first.offset
                    and first.offset + first.size <= offset + size and size > first.size):
                break
        else:
            return False
        given = self._given(index, path)
        image = _read_image(given, offset, size) if given else None
        if given:
            self.res.images[index] = given
        self.writer.move_region(index, base, size, image)
        pool = Mapping(path, base, size, offset, index, 0, line)
        alias = Mapping(first.path, first.base, first.size, first.offset, index,
                        base + (first.offset - offset) - first.base, first.line)
        self.maps = [alias if m is first else m for m in self.maps] + [pool]
        self.res.regions[index] = pool
        self.res.folded.append(alias)
        self.last = None
        return True

    def _find(self, addr: int, size: int) -> Mapping | None:
        m = self.last
        if m is not None and m.base <= addr and addr + size <= m.base + m.size:
            return m
        for m in self.maps:
            if m.base <= addr and addr + size <= m.base + m.size:
                self.last = m
                self.touched.add(m.region)
                return m
        return None

    # -- entries ---------------------------------------------------------------------------

    def entry(self, e: str) -> bool:
        """Handle one entry; True at STOP."""
        res = self.res
        if e == "FENCE":
            res.entries["FENCE"] += 1
            if self.writer is None:
                res.startup_fences += 1
            else:
                self.writer.fence("sfence")
                res.counts["fence"] += 1
            return False
        if e.startswith("STORE;"):
            self._store(e)
            return False
        if e.startswith("FLUSH;"):
            self._flush(e)
            return False
        if e.startswith("REGISTER_FILE;"):
            res.entries["REGISTER_FILE"] += 1
            f = e.split(";")
            if len(f) != 5:
                raise _Fail(f"REGISTER_FILE has {len(f) - 1} fields, not 4 (PATH;ADDR;SIZE;OFFSET)")
            self.register(f[1], _num(f[2], "address"), _num(f[3], "size"), _num(f[4], "offset"), 0)
            return False
        if e == "STOP":
            return True
        if not e:
            raise _Fail("empty entry")
        if _UNKNOWN.match(e):
            raise _Fail(f"unknown entry {e.split(';')[0]!r} (known: STORE, FLUSH, FENCE, "
                        "REGISTER_FILE, and EMIT_LOG text)")
        res.entries["EMIT_LOG"] += 1
        m = _OP.fullmatch(e)
        if m:
            if m.group(1):
                kind, value = "op_" + m.group(1), int(m.group(2))
            else:
                kind, value = "op_" + m.group(4).lower(), int(m.group(3))
        elif e.startswith(("op_begin", "op_end")):
            raise _Fail("bad operation marker (expected 'op_begin N' or 'op_end N', N a decimal number)")
        elif (r := _REGION.fullmatch(e)) is not None:
            self.register("", int(r.group(1), 16), int(r.group(2)), 0, 0)
            return False
        elif (o := _OBJ.fullmatch(e)) is not None:
            g = o.groups()
            where = (g[3], int(g[4]), int(g[5]), g[6], g[7] or "", int(g[8] or 0), int(g[9] or 0),
                     g[10] or "") if g[3] else None
            kind, value = (("alloc", (int(g[0], 16), int(g[1]), where)) if g[0]
                           else ("free", (int(g[2], 16), 0, where)))
        elif e.startswith(("alloc ", "free ")):
            raise _Fail("bad object marker (expected 'alloc 0xADDR SIZE' or 'free 0xADDR')")
        else:
            kind, value = "mark", e
        if self.writer is None:
            self.before.append((kind, value))
        else:
            self._marker(kind, value)
        return False

    def _marker(self, kind: str, value) -> None:
        w = self.writer
        if kind == "op_begin":
            w.op_begin(value % (1 << 48))
        elif kind == "op_end":
            w.op_end(value % (1 << 48))
        elif kind in ("alloc", "free"):
            addr, size, where = value
            if self._find(addr, max(size, 1)) is None:
                raise _Fail(f"{kind} of {addr:#x} outside every registered PM region")
            site = self.sites.site(*where) if where else NO_SITE
            if kind == "alloc":
                w.alloc(addr, size, site=site, absolute=True)
            else:
                w.free(addr, site=site, absolute=True)
        else:
            w.mark(value)
        self.res.counts[kind] += 1

    def _store(self, e: str) -> None:
        res = self.res
        res.entries["STORE"] += 1
        f = e.split(";")
        if len(f) < 4:
            raise _Fail(f"STORE has {len(f) - 1} fields, not 3 (ADDR;VALUE;SIZE)")
        addr = _num(f[1], "address")
        value = _num(f[2], "value")
        size = _num(f[3], "size")
        if not 0 < size <= MAX_STORE:
            raise _Fail(f"store size {size} (pmemcheck logs 1 to {MAX_STORE} bytes per store)")
        if value >> (8 * size):
            raise _Fail(f"value {f[2]} does not fit in {size} bytes")
        if self.writer is None:
            raise _Fail(f"store at {addr:#x} before any REGISTER_FILE: the PM mapping was not "
                        "registered as a file (VALGRIND_PMC_REGISTER_PMEM_MAPPING is not logged); "
                        "give it with --region ADDR:SIZE")
        m = self._find(addr, size)
        if m is None:
            where = ", ".join(f"{r.path or 'region'} {r.base:#x}+{r.size:#x}" for r in self.maps)
            raise _Fail(f"store at {addr:#x} ({size} bytes) outside every registered PM region ({where})")
        site = self.sites.get(f[4:]) if len(f) > 4 else NO_SITE
        self.writer.store(addr + m.delta, value.to_bytes(size, "little"), site=site, absolute=True)
        res.counts["store"] += 1

    def _flush(self, e: str) -> None:
        res = self.res
        res.entries["FLUSH"] += 1
        f = e.split(";")
        if len(f) != 3:
            raise _Fail(f"FLUSH has {len(f) - 1} fields, not 2 (ADDR;SIZE)")
        addr = _num(f[1], "address")
        size = _num(f[2], "size")
        if size == LINE:          # one flush instruction: only the line holding ADDR (pmemcheck
            addr -= addr % LINE   # itself, without --flush-align, takes [ADDR, ADDR+64))
        end = addr + size
        if self.writer is None:
            res.outside_flush_lines += (end + LINE - 1) // LINE - addr // LINE
            return
        inside = 0
        flush = self.writer.flush
        for m in self.maps:
            lo, hi = max(addr, m.base), min(end, m.base + m.size)
            if lo >= hi:
                continue
            line = lo - lo % LINE
            self.touched.add(m.region)
            while line < hi:
                flush(line + m.delta, "clwb", absolute=True)
                line += LINE
                inside += 1
        res.counts["flush"] += inside
        res.outside_flush_lines += (end + LINE - 1) // LINE - addr // LINE - inside if size else 0


def summary(res: ImportResult, log: str) -> list[str]:
    """The lines `crashcheck trace import` prints."""
    c = res.counts
    e = res.entries
    out = [f"{log} -> {res.trace}: {sum(c.values())} events: {c['store']} stores, {c['flush']} line "
           f"flushes (from {e['FLUSH']} FLUSH entries), {c['fence']} fences, {c['op_begin']} "
           f"op_begin, {c['op_end']} op_end, {c['mark']} marks"
           + (f", {c['alloc']} allocations, {c['free']} frees" if c['alloc'] or c['free'] else "")
           + f"; {res.sites} sites"]
    for m, image in zip(res.regions, res.images):
        what = ("all zero (the log does not record the file's content; --image FILE gives it)"
                if image == "zero" else f"from {image}")
        name = m.path or "--region"
        out.append(f"  region {m.region}: {name} at {m.base:#x}, size {m.size:#x}, file offset "
                   f"{m.offset:#x}; initial image {what}")
    for m in res.folded:
        out.append(f"  mapping of {m.path} at {m.base:#x} (size {m.size:#x}, file offset {m.offset:#x}) "
                   f"folded onto region {m.region} at {m.base + m.delta:#x}")
    if res.startup_fences:
        out.append(f"  {res.startup_fences} fences before the first registration (process start-up) dropped")
    if res.outside_flush_lines:
        out.append(f"  {res.outside_flush_lines} flushed lines outside PM dropped")
    if res.skipped_lines:
        shown = ", ".join(map(str, res.skipped_lines[:5]))
        out.append(f"  {len(res.skipped_lines)} lines inside the store log that are not entries skipped "
                   f"(lines {shown}{', ...' if len(res.skipped_lines) > 5 else ''})")
    if not res.complete:
        out.append("  the log has no STOP (the program did not exit normally): the trace is marked cut")
    return out


def parse_region(text: str) -> tuple[int, int]:
    """ADDR:SIZE (numbers in C notation: 0x... or decimal) -> (address, size)."""
    addr, sep, size = text.partition(":")
    try:
        if not sep:
            raise ValueError
        base, length = int(addr, 0), int(size, 0)
    except ValueError:
        raise TraceError(f"--region {text!r}: expected ADDR:SIZE, e.g. 0x5200000:0x10000") from None
    if base < 0 or length <= 0:
        raise TraceError(f"--region {text!r}: the address must be >= 0 and the size > 0")
    return base, length
