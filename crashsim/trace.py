"""Trace reader: parses the binary trace format of docs/trace-format.md.

Owns: the on-disk format on the Python side (header, site table, chunks, events, region images)
and its errors. Never interprets events (that is the persistency models' job).
"""
from __future__ import annotations

import os
import re
import stat
import struct
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CrashcheckError

MAGIC = b"CCTRACE\0"
VERSION = 4
# 2 added the compact store8 event, 3 the site's flags and chain, 4 the site's inline chain
READABLE_VERSIONS = (1, 2, 3, 4)
SITE_OWN = 1                    # a site flag: named in one of the structure's own files
SITE_CODE_POINTER = 2           # a site flag: a store of a code address (vtable or function pointer)
HEADER = struct.Struct("<8sIIQQIIII16x")
CHUNK = struct.Struct("<IIQ")
CHUNK_MAGIC = 0x56454343
EVENT = struct.Struct("<BBHIQ")
ADDR_MASK = (1 << 48) - 1
NO_SITE = 0xFFFFFFFF
STORE8 = 13                     # compact plain 8-byte store into region 0: u64 word, u64 data
STORE8_WORD = struct.Struct("<QQ")
STORE8_NO_SITE = 0xFFFF

KINDS = {1: "store", 2: "ntstore", 3: "flush", 4: "fence", 5: "op_begin", 6: "op_end",
         7: "alloc", 8: "free", 9: "mark", 10: "load", 11: "region", 12: "end"}
PAYLOAD_KINDS = frozenset({1, 2, 7, 9, 11})   # store, ntstore, alloc, mark, region
FLUSH_SUBS = {1: "clflush", 2: "clflushopt", 3: "clwb"}
FENCE_SUBS = {1: "sfence", 2: "mfence", 3: "locked", 4: "seq_cst"}
STORE_ORIGINS = {0: "plain", 1: "atomic", 2: "rmw", 3: "cmpxchg", 4: "memset", 5: "memcpy",
                 6: "memmove", 7: "asm", 8: "libpmem", 9: "library"}


class TraceError(CrashcheckError):
    """A trace that cannot be read; the message is one line for the user."""


@dataclass(frozen=True)
class Site:
    id: int
    file: str
    line: int
    column: int
    func: str
    inlined_file: str = ""
    inlined_line: int = 0
    inlined_column: int = 0
    inlined_func: str = ""
    # the helper frames (the standard library's, glibc's) the site was named past, innermost
    # first, each "file:line in function": a std::atomic store is named by the structure's line
    chain: tuple[str, ...] = ()
    own: bool = False           # in one of the files `crashcheck build` named as the structure's
    code_pointer: bool = False  # the pass saw a code address (vtable or function pointer) stored here
    # the calls the site's code was inlined at, nearest first, up to the one in the function it
    # ended up in, each "file:line in function" (version 4; empty when not inlined, or read from
    # an older trace, whose inlined-at fields name one of them)
    inlined: tuple[str, ...] = ()

    @property
    def place(self) -> tuple:
        """The site without its inline chain: what told sites apart before version 4 (its own
        line and the inlined-at line). Counts of where threads met (harness/check/aims.py, the
        writer aims' pairs) are kept per place, so that the chain, which splits one place into
        as many sites as it has paths of calls to it, leaves them as they were."""
        return (self.file, self.line, self.column, self.func, self.inlined_file, self.inlined_line,
                self.inlined_column, self.inlined_func, self.chain)

    def as_dict(self) -> dict:
        """The JSON form used by `trace show --json`, bug records and reports."""
        out = {"file": self.file, "line": self.line, "column": self.column, "func": self.func}
        if self.inlined_func or self.inlined_line:
            out["inlined_at"] = {"file": self.inlined_file, "line": self.inlined_line,
                                 "column": self.inlined_column, "func": self.inlined_func}
        if self.chain:
            out["via"] = list(self.chain)
        if self.inlined:
            out["inline_chain"] = list(self.inlined)
        if self.own:
            out["own"] = True
        if self.code_pointer:
            out["code_pointer"] = True
        return out

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else (self.file or "?")
        text = f"{where} in {self.func or '?'}"
        if self.inlined_func or self.inlined_line:
            text += f" (inlined into {self.inlined_func or '?'} at {self.inlined_file}:{self.inlined_line})"
        if self.chain:
            text += f" via {self.chain[0]}"
        return text


@dataclass(frozen=True)
class Event:
    """One logged event. `off` is the offset in the region holding `addr` (None if in none)."""
    seq: int
    tid: int
    kind: str
    sub: str
    addr: int
    size: int
    data: bytes
    site: int
    region: int | None = None
    off: int | None = None

    @property
    def end(self) -> int:
        return self.addr + self.size


@dataclass
class Region:
    index: int
    base: int
    size: int
    image: Path


@dataclass
class Trace:
    path: Path
    version: int
    pool_base: int
    pool_size: int
    line_size: int
    loads: bool
    pid: int
    sites: list[Site]
    events: list[Event]
    regions: list[Region] = field(default_factory=list)
    complete: bool = True
    cut_reason: str = ""

    def site(self, site_id: int) -> Site | None:
        if 0 <= site_id < len(self.sites):
            return self.sites[site_id]
        return None


    def place(self, site_id: int) -> tuple:
        """SITE_ID's place (Site.place): its sites of one place, told apart by their inline
        chains, share it; an unknown id is a place of its own."""
        s = self.site(site_id)
        return s.place if s is not None else (site_id,)
    def region_image(self, index: int = 0) -> bytes:
        """The region's contents when it was registered (checked for size)."""
        region = self.regions[index]
        data = _read_regular(region.image, f"region {index} image of {self.path}", region.size)
        if len(data) < region.size:
            raise TraceError(f"{self.path}: region {index} image {_plain(str(region.image))} has "
                             f"{len(data)} bytes, the trace says {region.size}")
        return data

    def check_image(self, index: int = 0) -> None:
        """Raise TraceError unless region INDEX's image is a regular file of at least its size."""
        region = self.regions[index]
        image = _plain(str(region.image))
        try:
            st = os.stat(region.image)
        except FileNotFoundError:
            raise TraceError(f"{self.path}: region {index} image {image} is missing") from None
        except OSError as exc:
            raise TraceError(f"{self.path}: region {index} image {image}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{self.path}: region {index} image {image} is not a regular file")
        if st.st_size < region.size:
            raise TraceError(f"{self.path}: region {index} image {image} has {st.st_size} bytes, "
                             f"the trace says {region.size}")


def encode_event(kind: int, sub: int, tid: int, site: int, addr: int, size: int = 0,
                 data: bytes = b"") -> bytes:
    """One event in the binary format. DATA is the payload of store/ntstore/mark/region; an
    alloc's SIZE (the object size) goes into its payload as the format says."""
    if kind == 7:
        data = struct.pack("<Q", size)
    if kind in PAYLOAD_KINDS:
        size = len(data)
    else:
        data = b""
    if size > 0xFFFF or addr > ADDR_MASK:
        raise ValueError(f"event too large for the format (size {size}, addr {addr:#x})")
    pad = (-len(data)) % 8
    return EVENT.pack(kind, sub, tid, site, addr | (size << 48)) + data + bytes(pad)


def encode_store8(site: int, off: int, data: bytes) -> bytes:
    """A compact store8 event: plain 8-byte store by thread 0 at offset OFF of region 0."""
    if len(data) != 8 or off >= 1 << 40 or not (0 <= site < STORE8_NO_SITE or site == NO_SITE):
        raise ValueError(f"not a store8 (site {site}, offset {off:#x}, {len(data)} bytes)")
    word = STORE8 | ((STORE8_NO_SITE if site == NO_SITE else site) << 8) | (off << 24)
    return STORE8_WORD.pack(word, int.from_bytes(data, "little"))


def _plain(text: str) -> str:
    """TEXT fit for a one-line message: control characters escaped (internal)."""
    return text if text.isprintable() else text.encode("unicode_escape").decode("ascii")


def _read_regular(path: Path, what: str, limit: int | None = None) -> bytes:
    """The bytes of PATH (at most LIMIT), which must be a regular file: a FIFO, a character device
    (/dev/zero) or a folder is refused before anything is read, so nothing blocks or reads forever;
    a file that grows while it is read is read up to the size it had when opened."""
    name = _plain(str(path))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise TraceError(f"{name}: no such {what}") from None
    except PermissionError:
        raise TraceError(f"{name}: permission denied (cannot read this {what})") from None
    except OSError as exc:
        raise TraceError(f"{name}: cannot open this {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise TraceError(f"{name}: is a folder, not a {what}")
        if not stat.S_ISREG(st.st_mode):
            raise TraceError(f"{name}: not a regular file (a FIFO, socket or device); a {what} "
                             "must be a file")
        size = st.st_size if limit is None else min(st.st_size, limit)
        with os.fdopen(os.dup(fd), "rb", buffering=0) as f:
            data = f.read(size)
        return data or b""
    except OSError as exc:
        raise TraceError(f"{name}: cannot read this {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def _read_str(buf: memoryview, pos: int, what: str, limit: int = 0xFFFF,
              lines: bool = False) -> tuple[str, int]:
    """A site string at POS: its text and the position after it. Raises _Short past the file's
    end, _BadText for text no compiler writes: longer than LIMIT bytes, not UTF-8, or holding a
    control character (a newline only where LINES allows one: the helper chain)."""
    if pos + 2 > len(buf):
        raise _Short
    n = buf[pos] | buf[pos + 1] << 8
    pos += 2
    if n > limit:
        raise _BadText(f"the {what} of site {{site}} is {n} bytes long (at most {limit})")
    if pos + n > len(buf):
        raise _Short
    try:
        text = str(buf[pos:pos + n], "utf-8")
    except UnicodeDecodeError:
        raise _BadText(f"the {what} of site {{site}} is not UTF-8") from None
    bad = (CONTROL_LINES if lines else CONTROL).search(text)
    if bad:
        # A length that swallowed the next records reads binary: its zero bytes show it.
        raise _BadText(f"the {what} of site {{site}} holds the control character "
                       f"{bad.group(0)!r}")
    return text, pos + n


class _Short(Exception):
    """The site table runs past the end of the file (internal)."""


class _BadText(Exception):
    """A site string no compiler writes; the message has `{site}` for the site's number (internal)."""


SITE_MIN = 16 + 4 * 2          # the smallest site record: four u32 and four empty strings
REGION_MAX_NAME = 4096         # the runtime's longest image name (cc_emit_region)
PATH_MAX = 4096                # Linux's longest path: a site's file name longer than it is no name
SITE_FLAGS = SITE_OWN | SITE_CODE_POINTER      # every flag bit a version 3 site record may carry
HEADER_FLAGS = 1                               # bit 0: loads were instrumented
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
CONTROL_LINES = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")   # the chain's lines end in newlines


def _normal(name: str) -> str:
    """A source file name without `.` and `..` components (empty stays empty)."""
    return os.path.normpath(name) if name else name


def _parse_sites(buf: memoryview, pos: int, count: int, path: Path,
                 version: int = VERSION) -> tuple[list[Site], int]:
    room = (len(buf) - pos) // SITE_MIN
    if count > room:
        # Checked first: a bit-flipped count of 2^32 must not build sites for minutes.
        raise TraceError(f"{path}: corrupt or truncated trace: the header says {count} sites, the "
                         f"file has room for at most {room}")
    sites = []
    try:
        for i in range(count):
            line, col, iline, icol = struct.unpack_from("<IIII", buf, pos)
            pos += 16
            flags = 0
            if version >= 3:
                (flags,) = struct.unpack_from("<I", buf, pos)
                pos += 4
                if flags & ~SITE_FLAGS:
                    raise TraceError(f"{path}: corrupt site table: site {i} has flags {flags:#x}, "
                                     f"of which only {SITE_FLAGS:#x} are defined")
            file, pos = _read_str(buf, pos, "file name", PATH_MAX)
            func, pos = _read_str(buf, pos, "function name")
            ifile, pos = _read_str(buf, pos, "inlined-at file name", PATH_MAX)
            ifunc, pos = _read_str(buf, pos, "inlined-at function name")
            chain = inlined = ""
            if version >= 3:
                chain, pos = _read_str(buf, pos, "helper chain", lines=True)
            if version >= 4:
                inlined, pos = _read_str(buf, pos, "inline chain", lines=True)
            # (a debug-info name like trees/artcow/../woart/x.c is one file: named once)
            sites.append(Site(i, _normal(file), line, col, func, _normal(ifile), iline, icol, ifunc,
                              tuple(chain.split("\n")) if chain else (), bool(flags & SITE_OWN),
                              bool(flags & SITE_CODE_POINTER), tuple(inlined.split("\n")) if inlined else ()))
    except (struct.error, _Short):
        raise TraceError(f"{path}: truncated site table (read {len(sites)} of {count} sites)") from None
    except _BadText as exc:
        raise TraceError(f"{path}: corrupt site table: {str(exc).format(site=len(sites))}") from None
    return sites, pos


def _parse_region(path: Path, seq: int, index: int, nregions: int, base: int, payload: memoryview,
                  plen: int) -> Region:
    """A `region` event's payload: u64 size, u64 name length, the image file's name (internal)."""
    where = f"{path}: corrupt trace: region event {seq}"
    if plen < 16:
        raise TraceError(f"{where} has a payload of {plen} bytes, less than its 16-byte head")
    rsize, nlen = struct.unpack_from("<QQ", payload, 0)
    if nlen > plen - 16 or nlen > REGION_MAX_NAME:
        raise TraceError(f"{where} names an image of {nlen} bytes in a payload of {plen - 16}")
    if index != nregions:
        raise TraceError(f"{where} registers region {index}, expected region {nregions}")
    if rsize == 0 or base + rsize > ADDR_MASK + 1:
        raise TraceError(f"{where} has base {base:#x} and size {rsize:#x}, not a range of user "
                         "addresses")
    try:
        name = str(payload[16:16 + nlen], "utf-8")
    except UnicodeDecodeError:
        raise TraceError(f"{where} names an image file that is not UTF-8") from None
    if not name or name in (".", "..") or "/" in name or "\\" in name or not name.isprintable():
        # The runtime writes the image beside the trace; anything else would read other files.
        raise TraceError(f"{where} names the image {_plain(name)!r}, which is not a file name in "
                         "the trace's folder")
    return Region(index, base, rsize, path.parent / name)


def read_trace(path: str | os.PathLike, *, check_images: bool = True) -> Trace:
    """Read a whole trace. Raises TraceError on anything but a cut tail (see Trace.complete).

    Hostile input (docs/trace-format.md "Readers"): only a regular file is read, and only its size
    when opened; every count is checked against the bytes it needs before it is used; site names
    and image names must be UTF-8, image names plain file names beside the trace; unknown kinds,
    events past their chunk, chunks whose events do not fill them and stores outside their
    region are corrupt. Only a tail cut at any byte (the program died) gives an incomplete trace.
    """
    path = Path(path)
    raw = _read_regular(path, "trace file")
    buf = memoryview(raw)
    if len(raw) < 8 or raw[:8] != MAGIC:
        raise TraceError(f"{path}: not a crashcheck trace (bad magic)")
    if len(raw) < HEADER.size:
        raise TraceError(f"{path}: truncated header ({len(raw)} of {HEADER.size} bytes)")
    _, version, hsize, pool_base, pool_size, line_size, flags, pid, nsites = HEADER.unpack_from(buf, 0)
    reserved = bytes(buf[HEADER.size - 16:HEADER.size])
    if version not in READABLE_VERSIONS:
        raise TraceError(f"{path}: unknown trace version {version} (this crashcheck reads versions "
                         f"{', '.join(map(str, READABLE_VERSIONS))})")
    if hsize != HEADER.size or line_size == 0 or line_size & (line_size - 1) or line_size > 1 << 16:
        raise TraceError(f"{path}: corrupt header (header size {hsize}, line size {line_size})")
    if flags & ~HEADER_FLAGS or any(reserved):
        raise TraceError(f"{path}: corrupt header (flags {flags:#x}, reserved bytes "
                         f"{'not ' if any(reserved) else ''}zero)")
    if pool_base + pool_size > ADDR_MASK + 1:
        raise TraceError(f"{path}: corrupt header: pool base {pool_base:#x} and size {pool_size:#x} "
                         "are not a range of user addresses")
    sites, pos = _parse_sites(buf, hsize, nsites, path, version)

    trace = Trace(path, version, pool_base, pool_size, line_size, bool(flags & 1), pid, sites, [])
    events = trace.events
    regions: list[tuple[int, int, int]] = []   # (base, end, index) for offsets
    cut = ""
    ended = False
    unpack = EVENT.unpack_from
    chunk_no = 0
    total = len(raw)
    while pos < total and not cut and not ended:
        if total - pos < CHUNK.size:
            cut = f"cut inside the header of chunk {chunk_no}"
            break
        magic, nevents, plen = CHUNK.unpack_from(buf, pos)
        if magic != CHUNK_MAGIC:
            raise TraceError(f"{path}: corrupt trace: bad chunk magic at byte {pos} "
                             f"(after {len(events)} events)")
        pos += CHUNK.size
        end = pos + plen
        if end > total:
            cut = f"chunk {chunk_no} cut after {total - pos} of {plen} bytes"
            end = total
        for nth in range(nevents):
            if end - pos < EVENT.size:
                if not cut:
                    raise TraceError(f"{path}: corrupt trace: chunk {chunk_no} holds fewer events than it says")
                break
            if raw[pos] == STORE8:
                word, value = STORE8_WORD.unpack_from(buf, pos)
                if not regions:
                    raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} is a "
                                     "store8 before any region")
                base, rend, _ = regions[0]
                off = word >> 24
                if base + off + 8 > rend:
                    raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} stores "
                                     f"at offset {off:#x}, outside region 0")
                site = (word >> 8) & 0xFFFF
                if site >= nsites and site != STORE8_NO_SITE:
                    raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} names "
                                     f"site {site}, the site table has {nsites}")
                events.append(Event(len(events), 0, "store", "plain", base + off, 8,
                                    value.to_bytes(8, "little"), NO_SITE if site == STORE8_NO_SITE else site,
                                    0, off))
                pos += 16
                continue
            kind, sub, tid, site, word = unpack(buf, pos)
            name = KINDS.get(kind)
            if name is None:
                raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} "
                                 f"has kind {kind}, which is no event kind")
            if site >= nsites and site != NO_SITE:
                # the runtime numbers every site in its table (anything else is NO_SITE)
                raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} names "
                                 f"site {site}, the site table has {nsites}")
            addr, size = word & ADDR_MASK, word >> 48
            elen = (size + 7) & ~7 if kind in PAYLOAD_KINDS else 0
            if pos + EVENT.size + elen > end:
                if not cut:
                    raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} "
                                     f"({name}, {size} bytes) runs past its chunk")
                break
            payload = buf[pos + EVENT.size: pos + EVENT.size + elen]
            pos += EVENT.size + elen
            if name == "end":
                if nth != nevents - 1 and not cut:
                    # The end marker is the last event of its chunk; a count past it is corrupt
                    # (a count of 2^32-1 would otherwise pass: reading stops at the marker).
                    raise TraceError(f"{path}: corrupt trace: chunk {chunk_no} says {nevents} events, "
                                     f"its end marker is event {nth + 1}")
                if pos != end and not cut:
                    raise TraceError(f"{path}: corrupt trace: chunk {chunk_no} says {plen} bytes, its "
                                     f"end marker ends at byte {pos}, not {end}")
                ended = True
                break
            if name == "region":
                region_ = _parse_region(path, len(events), sub, len(trace.regions), addr, payload, size)
                trace.regions.append(region_)
                regions.append((addr, addr + region_.size, sub))
                continue
            if name in ("store", "ntstore"):
                subname = STORE_ORIGINS.get(sub, str(sub))
                data = bytes(payload[:size])
            elif name == "flush":
                subname = FLUSH_SUBS.get(sub, str(sub))
                data = b""
            elif name == "fence":
                subname = FENCE_SUBS.get(sub, str(sub))
                data = b""
            elif name == "mark":
                subname = ""
                data = bytes(payload[:size])
            elif name == "alloc":
                if size != 8:
                    raise TraceError(f"{path}: corrupt trace: alloc event {len(events)} at byte "
                                     f"{pos - EVENT.size - elen} has a payload of {size} bytes, not 8")
                subname = ""
                data = b""
                (size,) = struct.unpack_from("<Q", payload, 0)
            else:
                subname = ""
                data = b""
            region = off = None
            if name not in ("op_begin", "op_end", "mark", "fence"):
                for base, rend, index in regions:
                    if base <= addr < rend:
                        region, off = index, addr - base
                        break
            events.append(Event(len(events), tid, name, subname, addr, size, data, site, region, off))
        else:
            if pos != end:
                # Every event arrived but bytes are left: the payload length is wrong (a cut
                # tail would have cut the events too).
                raise TraceError(f"{path}: corrupt trace: chunk {chunk_no} says {plen} bytes, its "
                                 f"{nevents} events end at byte {pos}, not {end}")
        pos = end
        chunk_no += 1
    if not ended and not cut:
        cut = "no end marker (the traced program died or the file was truncated at a chunk boundary)"
    if cut:
        trace.complete = False
        trace.cut_reason = f"{cut}; read {len(events)} events"
    if check_images:
        for region in trace.regions:
            trace.check_image(region.index)
    return trace
