"""Hand-made traces: build events in Python, get them as crashcheck.crashsim.trace.Event lists or write them as
binary trace files in exactly the format of docs/trace-format.md.

Owns: writing the trace format from Python (tests, hand-made traces, synthetic benchmarks). The
runtime (instrument/runtime/) is the real writer; crashsim/trace.py is the reader this must agree
with.

    w = TraceWriter(pool_size=4096)
    w.op_begin(0)
    w.store(0x40, (7).to_bytes(8, "little"))
    w.flush(0x40, "clwb"); w.fence("sfence")
    w.op_end(0)
    events = w.events()          # in memory, as read_trace would return them
    w.write("t.trace")           # t.trace + t.trace.region0

Addresses given to the methods are offsets in region 0 (the pool) unless `absolute=True`.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

from .trace import (ADDR_MASK, CHUNK, CHUNK_MAGIC, EVENT, FENCE_SUBS, FLUSH_SUBS, HEADER, KINDS, MAGIC,
                    NO_SITE, STORE8_NO_SITE, STORE_ORIGINS, VERSION, Event, encode_event, encode_store8)

KIND_IDS = {name: k for k, name in KINDS.items()}
FLUSH_IDS = {name: k for k, name in FLUSH_SUBS.items()}
FENCE_IDS = {name: k for k, name in FENCE_SUBS.items()}
ORIGIN_IDS = {name: k for k, name in STORE_ORIGINS.items()}
DEFAULT_POOL = 0x600000000000


class _Rec:
    """One event as added (a plain class with slots: importers add 100,000s of them)."""
    __slots__ = ("kind", "sub", "tid", "site", "addr", "size", "payload")

    def __init__(self, kind: int, sub: int, tid: int, site: int, addr: int, size: int,
                 payload: bytes) -> None:
        self.kind = kind
        self.sub = sub
        self.tid = tid
        self.site = site
        self.addr = addr
        self.size = size
        self.payload = payload


@dataclass
class _SiteRec:
    file: str
    line: int
    column: int
    func: str
    inlined_file: str
    inlined_line: int
    inlined_column: int
    inlined_func: str
    chain: str = ""          # frames named past, one a line (a call site's: the callee, `f()`)
    inlined: tuple[str, ...] = ()


class TraceWriter:
    """Collects events in order; `events()` and `write()` render them."""

    def __init__(self, *, pool_base: int = DEFAULT_POOL, pool_size: int = 4096, line_size: int = 64,
                 image: bytes | None = None, pid: int = 0, loads: bool = False) -> None:
        if image is not None and len(image) != pool_size:
            raise ValueError(f"image has {len(image)} bytes, the pool {pool_size}")
        self.pool_base = pool_base
        self.pool_size = pool_size
        self.line_size = line_size
        self.pid = pid
        self.loads = loads
        self.sites: list[_SiteRec] = []
        self.records: list[_Rec] = []
        self.regions: list[tuple[int, int, bytes]] = []   # (base, size, initial image)
        self.region(pool_base, pool_size, image, absolute=True)

    # -- addresses and sites ---------------------------------------------------------------

    def _abs(self, addr: int, absolute: bool) -> int:
        return addr if absolute else self.pool_base + addr

    def site(self, file: str, line: int, func: str = "", column: int = 0, inlined_file: str = "",
             inlined_line: int = 0, inlined_column: int = 0, inlined_func: str = "", chain: str = "",
             inlined: tuple[str, ...] = ()) -> int:
        """Add a site; returns its id for the `site=` argument of the event methods. CHAIN: the helper
        chain (frames named past, one a line); INLINED: its inline chain (version 4), each call it was
        inlined at, "file:line in function"."""
        self.sites.append(_SiteRec(file, line, column, func, inlined_file, inlined_line,
                                   inlined_column, inlined_func, chain, tuple(inlined)))
        return len(self.sites) - 1

    def _add(self, kind: str, sub: int = 0, tid: int = 0, site: int = NO_SITE, addr: int = 0,
             size: int = 0, payload: bytes = b"") -> None:
        self.records.append(_Rec(KIND_IDS[kind], sub, tid, site, addr, size, payload))

    # -- events ----------------------------------------------------------------------------

    def region(self, addr: int, size: int, image: bytes | None = None, *, absolute: bool = False) -> int:
        """Register a PM region (region 0 is registered by the constructor). Returns its index."""
        index = len(self.regions)
        self.regions.append((self._abs(addr, absolute), size, image if image is not None else bytes(size)))
        self._add("region", index, 0, NO_SITE, self._abs(addr, absolute), 0, b"")
        return index

    def move_pool(self, base: int, size: int, image: bytes | None = None) -> None:
        """Place region 0 (the pool) at BASE with SIZE bytes (and IMAGE) instead, before any
        event has used an address: an importer that learns of the whole pool's mapping only
        after a smaller first one (libpmemobj maps a pool's header before the pool)."""
        self.move_region(0, base, size, image)

    def move_region(self, index: int, base: int, size: int, image: bytes | None = None) -> None:
        """Place region INDEX at BASE with SIZE bytes (and IMAGE) instead, before any event has
        used an address of it (as move_pool, for any region)."""
        if index >= len(self.regions):
            raise ValueError(f"move_region: no region {index}")
        old_base, old_size, _ = self.regions[index]
        addressed = {KIND_IDS[k] for k in ("store", "ntstore", "flush", "alloc", "free", "load")}
        if any(r.kind in addressed and (index == 0 or old_base <= r.addr < old_base + old_size)
               for r in self.records):
            raise ValueError(f"move_region: events that use addresses of region {index} were "
                             "written already")
        if image is not None and len(image) != size:
            raise ValueError(f"image has {len(image)} bytes, the region {size}")
        if index == 0:
            self.pool_base, self.pool_size = base, size
        self.regions[index] = (base, size, image if image is not None else bytes(size))
        for i, r in enumerate(self.records):
            if r.kind == KIND_IDS["region"] and r.sub == index:
                self.records[i] = _Rec(r.kind, r.sub, r.tid, r.site, base, r.size, r.payload)

    def store(self, addr: int, data: bytes, *, tid: int = 0, site: int = NO_SITE, origin: str = "plain",
              nt: bool = False, absolute: bool = False) -> None:
        self._add("ntstore" if nt else "store", ORIGIN_IDS[origin], tid, site, self._abs(addr, absolute),
                  len(data), bytes(data))

    def ntstore(self, addr: int, data: bytes, **kw) -> None:
        self.store(addr, data, nt=True, **kw)

    def flush(self, addr: int, kind: str = "clwb", *, tid: int = 0, site: int = NO_SITE,
              absolute: bool = False) -> None:
        """Flush the line holding ADDR (the event carries the line address, as the runtime logs it)."""
        a = self._abs(addr, absolute)
        self._add("flush", FLUSH_IDS[kind], tid, site, a - a % self.line_size, self.line_size)

    def fence(self, kind: str = "sfence", *, tid: int = 0, site: int = NO_SITE) -> None:
        self._add("fence", FENCE_IDS[kind], tid, site)

    def persist(self, addr: int, size: int, *, tid: int = 0, flush: str = "clwb", fence: str = "sfence",
                absolute: bool = False) -> None:
        """Flush every line of [ADDR, ADDR+SIZE), then fence (a persist() of libpmem's kind)."""
        a = self._abs(addr, absolute)
        line = a - a % self.line_size
        while line < a + size:
            self.flush(line, flush, tid=tid, absolute=True)
            line += self.line_size
        self.fence(fence, tid=tid)

    def op_begin(self, index: int, *, tid: int = 0) -> None:
        self._add("op_begin", 0, tid, NO_SITE, index)

    def op_end(self, index: int, *, tid: int = 0) -> None:
        self._add("op_end", 0, tid, NO_SITE, index)

    def alloc(self, addr: int, size: int, *, tid: int = 0, site: int = NO_SITE, absolute: bool = False) -> None:
        self._add("alloc", 0, tid, site, self._abs(addr, absolute), size)

    def free(self, addr: int, *, tid: int = 0, site: int = NO_SITE, absolute: bool = False) -> None:
        self._add("free", 0, tid, site, self._abs(addr, absolute))

    def mark(self, label: str, *, tid: int = 0, site: int = NO_SITE) -> None:
        data = label.encode()
        self._add("mark", 0, tid, site, 0, len(data), data)

    def load(self, addr: int, size: int, *, tid: int = 0, site: int = NO_SITE, absolute: bool = False) -> None:
        self._add("load", 0, tid, site, self._abs(addr, absolute), size)

    # -- rendering -------------------------------------------------------------------------

    def events(self) -> list[Event]:
        """The events as crashcheck.crashsim.trace.read_trace returns them (region events folded away)."""
        out: list[Event] = []
        known: list[tuple[int, int, int]] = []
        for r in self.records:
            name = KINDS[r.kind]
            if name == "region":
                base, size, _ = self.regions[r.sub]
                known.append((base, base + size, r.sub))
                continue
            if name in ("store", "ntstore"):
                sub = STORE_ORIGINS[r.sub]
            elif name == "flush":
                sub = FLUSH_SUBS[r.sub]
            elif name == "fence":
                sub = FENCE_SUBS[r.sub]
            else:
                sub = ""
            region = off = None
            if name not in ("op_begin", "op_end", "mark", "fence"):
                for base, end, index in known:
                    if base <= r.addr < end:
                        region, off = index, r.addr - base
                        break
            data = r.payload if name in ("store", "ntstore", "mark") else b""
            out.append(Event(len(out), r.tid, name, sub, r.addr, r.size, data, r.site, region, off))
        return out

    def image(self, index: int = 0) -> bytes:
        return self.regions[index][2]

    def write(self, path: str | os.PathLike, *, complete: bool = True, chunk_events: int = 4096,
              compact: bool = True, version: int = VERSION) -> Path:
        """Write the trace file and its region images next to it. Without COMPLETE no `end`.
        With COMPACT, stores the runtime would log as `store8` events are written as such.
        VERSION below 3 writes the older site records (no flags, no chain), 3 no inline chain."""
        path = Path(path)
        sites = b"".join(_pack_site(s, version) for s in self.sites)
        header = HEADER.pack(MAGIC, version, HEADER.size, self.regions[0][0], self.regions[0][1],
                             self.line_size, 1 if self.loads else 0, self.pid, len(self.sites))
        names = [f"{path.name}.region{i}" for i in range(len(self.regions))]
        encoded = []
        append = encoded.append
        base0, size0, _ = self.regions[0]
        end0 = base0 + size0 - 8
        compact = compact and size0 < 1 << 40
        store_id, region_id, flush_id = KIND_IDS["store"], KIND_IDS["region"], KIND_IDS["flush"]
        for r in self.records:
            kind = r.kind
            if (compact and kind == store_id and r.size == 8 and r.sub == 0 and r.tid == 0
                    and base0 <= r.addr <= end0 and (r.site < STORE8_NO_SITE or r.site == NO_SITE)):
                append(encode_store8(r.site, r.addr - base0, r.payload))
            elif kind == flush_id and r.addr <= ADDR_MASK:   # common, no payload: encoded inline
                append(EVENT.pack(kind, r.sub, r.tid, r.site, r.addr | (r.size << 48)))
            elif kind == region_id:
                name = names[r.sub].encode()
                payload = struct.pack("<QQ", self.regions[r.sub][1], len(name)) + name
                append(encode_event(kind, r.sub, r.tid, r.site, r.addr, r.size, payload))
            else:
                append(encode_event(kind, r.sub, r.tid, r.site, r.addr, r.size, r.payload))
        if complete:
            encoded.append(encode_event(KIND_IDS["end"], 0, 0, NO_SITE, 0))
        with open(path, "wb") as f:
            f.write(header)
            f.write(sites)
            for i in range(0, len(encoded), chunk_events):
                chunk = encoded[i:i + chunk_events]
                body = b"".join(chunk)
                f.write(CHUNK.pack(CHUNK_MAGIC, len(chunk), len(body)))
                f.write(body)
        for (base, size, image), name in zip(self.regions, names):
            _write_sparse(path.parent / name, image, size)
        return path


def _pack_str(s: str) -> bytes:
    data = s.encode()
    return struct.pack("<H", len(data)) + data


def _pack_site(s: _SiteRec, version: int = VERSION) -> bytes:
    if version < 3:
        return (struct.pack("<IIII", s.line, s.column, s.inlined_line, s.inlined_column)
                + _pack_str(s.file) + _pack_str(s.func) + _pack_str(s.inlined_file) + _pack_str(s.inlined_func))
    # version 3: flags 0 and the helper chain; 4: then the inline chain (docs/trace-format.md)
    return (struct.pack("<IIIII", s.line, s.column, s.inlined_line, s.inlined_column, 0)
            + _pack_str(s.file) + _pack_str(s.func) + _pack_str(s.inlined_file) + _pack_str(s.inlined_func)
            + _pack_str(s.chain) + (_pack_str("\n".join(s.inlined)) if version >= 4 else b""))


def _write_sparse(path: Path, image: bytes, size: int, page: int = 4096) -> None:
    """A file of exactly SIZE bytes with IMAGE's non-zero pages written (the rest are holes)."""
    with open(path, "wb") as f:
        f.truncate(size)
        zero = bytes(page)
        for off in range(0, len(image), page):
            chunk = image[off:off + page]
            if chunk != zero[:len(chunk)]:
                f.seek(off)
                f.write(chunk)
