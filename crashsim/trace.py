"""Trace reader: parses the binary trace format of docs/trace-format.md.

Owns: the on-disk format on the Python side (header, site table, chunks, events, region images)
and its errors. Never interprets events (that is the persistency models' job).
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

MAGIC = b"CCTRACE\0"
VERSION = 2
READABLE_VERSIONS = (1, 2)   # version 2 added the compact store8 event
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
                 6: "memmove", 7: "asm", 8: "libpmem"}


class TraceError(Exception):
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

    def as_dict(self) -> dict:
        """The JSON form used by `trace show --json`, bug records and reports."""
        out = {"file": self.file, "line": self.line, "column": self.column, "func": self.func}
        if self.inlined_func or self.inlined_line:
            out["inlined_at"] = {"file": self.inlined_file, "line": self.inlined_line,
                                 "column": self.inlined_column, "func": self.inlined_func}
        return out

    def describe(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else (self.file or "?")
        text = f"{where} in {self.func or '?'}"
        if self.inlined_func or self.inlined_line:
            text += f" (inlined into {self.inlined_func or '?'} at {self.inlined_file}:{self.inlined_line})"
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

    def region_image(self, index: int = 0) -> bytes:
        """The region's contents when it was registered (checked for size)."""
        region = self.regions[index]
        try:
            data = region.image.read_bytes()
        except FileNotFoundError:
            raise TraceError(f"{self.path}: region {index} image {region.image} is missing") from None
        if len(data) < region.size:
            raise TraceError(f"{self.path}: region {index} image {region.image} has {len(data)} bytes, "
                             f"the trace says {region.size}")
        return data[:region.size]


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


def _read_str(buf: memoryview, pos: int) -> tuple[str, int]:
    (n,) = struct.unpack_from("<H", buf, pos)
    pos += 2
    return bytes(buf[pos:pos + n]).decode("utf-8", "replace"), pos + n


def _parse_sites(buf: memoryview, pos: int, count: int, path: Path) -> tuple[list[Site], int]:
    sites = []
    try:
        for i in range(count):
            line, col, iline, icol = struct.unpack_from("<IIII", buf, pos)
            pos += 16
            file, pos = _read_str(buf, pos)
            func, pos = _read_str(buf, pos)
            ifile, pos = _read_str(buf, pos)
            ifunc, pos = _read_str(buf, pos)
            sites.append(Site(i, file, line, col, func, ifile, iline, icol, ifunc))
    except struct.error:
        raise TraceError(f"{path}: truncated site table (read {len(sites)} of {count} sites)") from None
    if pos > len(buf):
        raise TraceError(f"{path}: truncated site table (read {len(sites) - 1} of {count} sites)")
    return sites, pos


def read_trace(path: str | os.PathLike, *, check_images: bool = True) -> Trace:
    """Read a whole trace. Raises TraceError on anything but a cut tail (see Trace.complete)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise TraceError(f"{path}: no such trace file") from None
    except IsADirectoryError:
        raise TraceError(f"{path}: is a folder, not a trace file") from None
    buf = memoryview(raw)
    if len(raw) < 8 or raw[:8] != MAGIC:
        raise TraceError(f"{path}: not a crashcheck trace (bad magic)")
    if len(raw) < HEADER.size:
        raise TraceError(f"{path}: truncated header ({len(raw)} of {HEADER.size} bytes)")
    _, version, hsize, pool_base, pool_size, line_size, flags, pid, nsites = HEADER.unpack_from(buf, 0)
    if version not in READABLE_VERSIONS:
        raise TraceError(f"{path}: unknown trace version {version} (this crashcheck reads versions "
                         f"{', '.join(map(str, READABLE_VERSIONS))})")
    if hsize != HEADER.size or line_size == 0 or line_size & (line_size - 1):
        raise TraceError(f"{path}: corrupt header (header size {hsize}, line size {line_size})")
    sites, pos = _parse_sites(buf, hsize, nsites, path)

    trace = Trace(path, version, pool_base, pool_size, line_size, bool(flags & 1), pid, sites, [])
    events = trace.events
    regions: list[tuple[int, int, int]] = []   # (base, end, index) for offsets
    cut = ""
    ended = False
    unpack = EVENT.unpack_from
    chunk_no = 0
    while pos < len(raw) and not cut and not ended:
        if len(raw) - pos < CHUNK.size:
            cut = f"cut inside the header of chunk {chunk_no}"
            break
        magic, nevents, plen = CHUNK.unpack_from(buf, pos)
        if magic != CHUNK_MAGIC:
            raise TraceError(f"{path}: corrupt trace: bad chunk magic at byte {pos} "
                             f"(after {len(events)} events)")
        pos += CHUNK.size
        end = pos + plen
        if end > len(raw):
            cut = f"chunk {chunk_no} cut after {len(raw) - pos} of {plen} bytes"
            end = len(raw)
        for _ in range(nevents):
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
                events.append(Event(len(events), 0, "store", "plain", base + off, 8,
                                    value.to_bytes(8, "little"), NO_SITE if site == STORE8_NO_SITE else site,
                                    0, off))
                pos += 16
                continue
            kind, sub, tid, site, word = unpack(buf, pos)
            addr, size = word & ADDR_MASK, word >> 48
            elen = (size + 7) & ~7 if kind in PAYLOAD_KINDS else 0
            if pos + EVENT.size + elen > end:
                if not cut:
                    raise TraceError(f"{path}: corrupt trace: event {len(events)} runs past its chunk")
                break
            name = KINDS.get(kind)
            if name is None:
                raise TraceError(f"{path}: corrupt trace: event {len(events)} at byte {pos} "
                                 f"has kind {kind}, payload {elen}")
            payload = buf[pos + EVENT.size: pos + EVENT.size + elen]
            pos += EVENT.size + elen
            if name == "end":
                ended = True
                break
            if name == "region":
                rsize, nlen = struct.unpack_from("<QQ", payload, 0)
                image = path.parent / bytes(payload[16:16 + nlen]).decode()
                trace.regions.append(Region(sub, addr, rsize, image))
                regions.append((addr, addr + rsize, sub))
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
        pos = end
        chunk_no += 1
    if not ended and not cut:
        cut = "no end marker (the traced program died or the file was truncated at a chunk boundary)"
    if cut:
        trace.complete = False
        trace.cut_reason = f"{cut}; read {len(events)} events"
    if check_images:
        for region in trace.regions:
            try:
                have = region.image.stat().st_size
            except FileNotFoundError:
                raise TraceError(f"{path}: region {region.index} image {region.image} is missing") from None
            if have < region.size:
                raise TraceError(f"{path}: region {region.index} image {region.image} has {have} bytes, "
                                 f"the trace says {region.size}")
    return trace
