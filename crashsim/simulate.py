"""The fast persistency simulator: one pass over the events, yielding crash points with their
pending units, while the guaranteed image is kept up to date incrementally.

Owns: the x86-ADR and eADR rules (and pmreorder's flush-only view of ADR), crash points, and the pending state at each of them.

x86-ADR (default)
  - Every store is split into failure-atomic pieces (crashcheck.crashsim.persistency.split_points).
  - Cached pieces of one cache line persist in trace order: at a crash, each line holds a prefix
    of its pieces, at least its guaranteed prefix. Except: the pieces of one memset, memcpy,
    memmove or libpmem copy within one line (model.UNORDERED_ORIGINS) persist in any order among
    themselves, since the routine's stores are not issued in address order; the line then holds
    a prefix up to such a store plus any subset of that store's pieces in the line.
  - A flush of a line (clflush, clflushopt, clwb; by any thread) covers every piece of the line
    stored before it, by any thread. The coverage becomes a guarantee when the flushing thread
    next fences (sfence, mfence, locked RMW, seq_cst fence). With clflush_guarantees, a clflush
    guarantees at once.
  - Non-temporal (NT) stores bypass the cache, so they are not part of any line's prefix order:
    each NT piece is an independent unit that may or may not have persisted until its thread's
    next fence, which guarantees it. (A flush does not guarantee an NT piece: it sits in the
    issuing core's write-combining buffer, which only that core's fence drains.) When an NT piece
    and a cached piece of the same bytes both persist, the later one in trace order wins.
  - Multi-threaded traces use the recorded global order.

pmreorder (ADR as pmreorder replays it)
  - As ADR, except that a cached piece can persist only once a flush of its line (by any thread)
    covers it: a line's unit holds its flushed pending pieces only (a prefix of its pending ones,
    since a flush covers every earlier piece of the line); the unflushed ones are lost in every
    state. (ADR lets them persist by eviction.)

eADR
  - Caches are persistent: a store is durable once it leaves its thread's store buffer, which
    drains in program order. Flushes change nothing. Each thread's pieces since its last drain
    point are one pending unit, persisting as a prefix; units of different threads are
    independent (each thread's buffer drains on its own). A thread's drain points are its fences
    and its own operation boundaries: for one thread the pending unit is the pieces since the
    previous crash point, so every instant between two crash points is covered; everything
    earlier is durable. NT stores are treated like any other store. A locked instruction (RMW,
    cmpxchg, xchg; logged as a `locked` fence, then its store) drains the buffer after its store
    too, so that store is durable at once: another thread that reads it (the scheduler lets it
    run right after the instruction) can never see a value a crash then takes back.

Library stores
  A store of origin `library` (model.DURABLE_ORIGINS: written inside a precompiled library
  call, libpmemobj's metadata) is durable when it is logged: under x86-ADR with every earlier
  piece of its line, under eADR with every earlier piece of its thread. Crash points inside the
  library call are not explored.

Crash points
  Before every fence, at every op_begin and op_end, and at the end of the trace (with
  clflush_guarantees also before every clflush, since durability changes there and a crash just
  before it would otherwise never be examined). A crash point at op_begin(i) is the moment before
  operation i starts; at op_end(i) the moment after it returned (so i is complete, not in flight).

Pending units (what a crash state chooses)
  A crash state picks, for every pending unit, how many of its pending pieces persisted: for a
  line unit any prefix length 0..n, for an NT unit 0 or 1, for an eADR thread unit any prefix
  (in both, a memset's pieces in one line any subset of themselves: Unit.orders). The number of
  legal states is the product of the units' choices ((n + 1) for a plain prefix unit).

Regions: a simulator made from a trace images every registered PM region, laid out one after
the other (crashcheck.crashsim.layout): a piece's `img` is its offset in that image, and recovery is given
each region (docs/trees.md, "Regions past the pool"). A simulator made from events and a bare
image images region 0 only; pieces of other regions count in the states and their numbers, and
leave its image unchanged. Stores outside every region are ignored (counted in `unplaced`).

Streaming: the simulator's `image` is the yielded crash point's guaranteed image only until the
next crash point is requested; consume a crash point's states before advancing the generator.
"""
from __future__ import annotations

import functools
import mmap
import os
from dataclasses import dataclass, field
from itertools import combinations
from typing import Callable, Iterator, Sequence

from .image import ImageState, Writes
from .layout import Layout, trace_layout
from .persistency import DURABLE_ORIGINS, MAX_UNORDERED, UNORDERED_ORIGINS, ModelOptions, Piece, split_points
from .trace import Event, Trace, TraceError


@dataclass(frozen=True)
class Unit:
    """One pending unit: kind "line" (a line's pending cached pieces, persisting as a prefix),
    "nt" (one NT piece), or "thread" (eADR: a thread's pieces since its last drain point, in
    program order, persisting as a prefix). A state chooses 0..choices-1 for it: choice k keeps
    the first k pieces, unless the unit holds pieces of one memset/memcpy/memmove in one line
    (Piece.unordered), which persist as any subset of themselves: then `orders` lists the kept
    pieces of every choice (unordered_choices); choice 0 still keeps none and the last keeps all."""
    kind: str
    line: int | None          # line address (absolute), None for "thread"
    pieces: tuple[Piece, ...]
    orders: tuple[tuple[int, ...], ...] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if any(p.unordered for p in self.pieces):
            object.__setattr__(self, "orders", unordered_choices(self.pieces))

    @property
    def choices(self) -> int:
        return len(self.pieces) + 1 if self.orders is None else len(self.orders)

    def kept(self, k: int) -> tuple[Piece, ...]:
        """The pieces choice K keeps, in trace order."""
        if self.orders is None:
            return self.pieces[:k]
        return tuple(self.pieces[i] for i in self.orders[k])

    def lost(self, k: int) -> tuple[Piece, ...]:
        """The pieces choice K drops, in trace order."""
        if self.orders is None:
            return self.pieces[k:]
        keep = set(self.orders[k])
        return tuple(p for i, p in enumerate(self.pieces) if i not in keep)


def unordered_choices(pieces: Sequence[Piece]) -> tuple[tuple[int, ...], ...] | None:
    """The kept piece indices of each legal choice of a unit whose PIECES persist in order, except
    that a run of 2..MAX_UNORDERED consecutive pieces of one unordered store in one line persists
    as any subset (None when the unit has no such run). Order: by the prefix they extend, a run's
    proper subsets (by size, then position) between the prefix before it and the one after it."""
    runs: dict[int, int] = {}
    i, n = 0, len(pieces)
    while i < n:
        j = i + 1
        p = pieces[i]
        if p.unordered:
            while j < n and pieces[j].unordered and pieces[j].seq == p.seq and pieces[j].line == p.line:
                j += 1
            if 2 <= j - i <= MAX_UNORDERED:
                runs[i] = j
        i = j
    if not runs:
        return None
    return _orders(n, tuple(runs.items()))


@functools.lru_cache(maxsize=256)
def _orders(n: int, runs_items: tuple[tuple[int, int], ...]) -> tuple[tuple[int, ...], ...]:
    """unordered_choices' answer for N pieces with RUNS_ITEMS (start, end) unordered runs: it
    depends on nothing else, and a pending memset is met again at every crash point until it
    is flushed (where code never flushes, at every point of the trace), so it is built once."""
    runs = dict(runs_items)
    out: list[tuple[int, ...]] = []
    pos = 0
    while pos <= n:
        prefix = tuple(range(pos))
        out.append(prefix)
        end = runs.get(pos)
        if end is None:
            pos += 1
            continue
        for size in range(1, end - pos):
            out.extend(prefix + c for c in combinations(range(pos, end), size))
        pos = end
    return tuple(out)


@dataclass
class CrashPoint:
    """A point at which power may fail.

    index      crash point number, from 0, in trace order
    event      index of the event the crash happens before (len(events) for the end of trace)
    kind       "fence", "clflush", "op_begin", "op_end" or "end"
    op         the operation in flight (the latest begun and not ended), None between operations
    in_flight  every operation begun and not ended (more than one only in multi-threaded traces)
    last_done  the latest operation that ended, None before the first op_end
    units      the pending units; a state chooses a prefix length per unit
    legal      exact number of legal crash states (product of unit choices)
    patch      region-0 writes that became guaranteed since the previous crash point
    fp         fingerprint of the guaranteed image
    """
    index: int
    event: int
    kind: str
    op: int | None
    in_flight: tuple[int, ...]
    last_done: int | None
    units: tuple[Unit, ...]
    legal: int
    patch: Writes = field(repr=False, default_factory=list)
    fp: int = 0
    line_size: int = 64

    @property
    def radices(self) -> list[int]:
        """Per unit, its highest choice (keep every piece): a state is a choice 0..radix per unit."""
        return [u.choices - 1 for u in self.units]

    @property
    def pending_lines(self) -> list[int]:
        """Addresses of the cache lines holding pending pieces, sorted, no repeats."""
        return sorted({p.line * self.line_size for u in self.units for p in u.pieces})

    @property
    def pending_pieces(self) -> int:
        return sum(len(u.pieces) for u in self.units)

    def kept(self, choice: Sequence[int]) -> list[Piece]:
        """The pending pieces a state keeps (persisted beyond the guarantee), in trace order."""
        out = [p for u, k in zip(self.units, choice) for p in u.kept(k)]
        out.sort(key=lambda p: p.id)
        return out

    def lost(self, choice: Sequence[int]) -> list[Piece]:
        """The pending pieces a state drops (did not persist), in trace order."""
        out = [p for u, k in zip(self.units, choice) for p in u.lost(k)]
        out.sort(key=lambda p: p.id)
        return out


def _read_region(trace: Trace, index: int, view: memoryview) -> None:
    """Region INDEX's initial image into VIEW (zero, its size), read extent by extent: the holes
    of a sparse image (a pool of 64 MiB holding a small structure) are skipped, not read. Not a
    mapping of the file: touching a hole of a mapped file on a full tmpfs kills the process with
    SIGBUS, where read() just sees zeros."""
    region = trace.regions[index]
    trace.check_image(index)                          # a regular file, long enough, or TraceError
    try:
        with open(region.image, "rb") as f:
            fd = f.fileno()
            if os.fstat(fd).st_size < region.size:
                trace.region_image(index)             # raises the reader's error
                return
            pos = 0
            while pos < region.size:
                try:
                    data = os.lseek(fd, pos, os.SEEK_DATA)
                    hole = min(os.lseek(fd, data, os.SEEK_HOLE), region.size)
                except OSError:                       # ENXIO: only a hole is left; or no SEEK_DATA
                    if not hasattr(os, "SEEK_DATA"):
                        data, hole = pos, region.size
                    else:
                        break
                if data >= region.size:
                    break
                f.seek(data)
                got = f.readinto(view[data:hole])
                if not got:
                    break
                pos = data + got
    except OSError:
        data = trace.region_image(index)              # raises the reader's error
        view[:len(data)] = data


def _map_image(trace: Trace, lay: Layout, read: bool = True) -> mmap.mmap | bytes:
    """The initial post-crash image of every region of TRACE, laid out by LAY: anonymous memory
    (ImageState takes it as it is), whose pages are zero until written (a bytearray of a 64 MiB
    pool was zeroed page by page, which cost more CPU than checking thousands of crash states).
    Without READ the regions stay zero (their image files are not read)."""
    if lay.total == 0:
        return b""
    image = mmap.mmap(-1, lay.total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if not read:
        return image
    view = memoryview(image)
    for index, (off, size) in enumerate(zip(lay.offsets, lay.sizes)):
        if size:
            _read_region(trace, index, view[off:off + size])
    return image


class Simulator:
    """Streams the crash points of a list of events under a persistency model.

    events        the trace's events (crashcheck.crashsim.trace.Event), in recorded order
    image         the initial image: region 0's (Trace.region_image(0)), or with LAYOUT every
                  region's, laid out by it; b"" if there is none
    line_size     cache-line size (ModelOptions.line_size overrides it)
    layout        where each region sits in IMAGE (crashcheck.crashsim.layout); None: region 0 only
    """

    def __init__(self, events: Sequence[Event], image: bytes | bytearray | mmap.mmap = b"", *,
                 line_size: int = 64, region_base: int = 0,
                 options: ModelOptions | None = None, layout: Layout | None = None) -> None:
        self.options = options or ModelOptions()
        self.line_size = self.options.validate(line_size)
        self.unit = self.options.atomic_unit
        bases = layout.bases if layout is not None else (region_base,)
        for index, base in enumerate(bases):
            if base % self.unit:
                raise TraceError(f"region {index} base 0x{base:x} is not aligned to the atomic unit "
                                 f"({self.unit} bytes)")
        self.events = events
        self.layout = layout
        self.offsets = layout.offsets if layout is not None else (0,)
        self.image = ImageState(image, self.unit, regions=frozenset(range(len(self.offsets))))
        self.unplaced = 0      # stores outside every registered region (ignored)
        self.pieces = 0        # pieces made so far

    @classmethod
    def from_trace(cls, trace: Trace, options: ModelOptions | None = None,
                   read_images: bool = True) -> "Simulator":
        """TRACE's simulator; without READ_IMAGES over zeroed regions (for callers that read no
        image: which stores are pending at which crash point does not depend on the images)."""
        lay = trace_layout(trace)
        image = _map_image(trace, lay, read_images)
        base = trace.regions[0].base if trace.regions else trace.pool_base
        return cls(trace.events, image, line_size=trace.line_size, region_base=base, options=options,
                   layout=lay if trace.regions else None)

    def count_crash_points(self) -> int:
        """How many crash points crash_points() will yield (a cheap pass, for progress bars)."""
        clflush = self.options.clflush_guarantees and self.options.model != "eadr"
        n = 1
        for ev in self.events:
            k = ev.kind
            if k in ("fence", "op_begin", "op_end") or (clflush and k == "flush" and ev.sub == "clflush"):
                n += 1
        return n

    def crash_points(self, skip_before: int = 0, wanted: Callable[[int], bool] | None = None,
                     unwanted_at: Callable[[int], bool] | None = None) -> Iterator[CrashPoint]:
        """Every crash point in trace order. Points before event SKIP_BEFORE (set-up nobody
        explores), with WANTED the points whose index it rejects, and with UNWANTED_AT those
        before an event it accepts (program mode's NoReorderNoCheck sections), come without their pending
        units and base patch (units (), legal 1, patch []): their changes reach the next full
        point's patch, so the image stays in step, and the numbering is the same. A set-up that
        leaves thousands of lines pending (a library formatting its pool) would otherwise cost a
        unit per line at each of its fences."""
        opts = self.options
        eadr = opts.model == "eadr"
        clflush_now = opts.clflush_guarantees and not eadr
        line_size, unit, image = self.line_size, self.unit, self.image
        offsets = self.offsets
        record = image.record

        pend: dict[int, list[Piece]] = {}          # line -> pending cached pieces, in order
        total: dict[int, int] = {}                 # line -> cached pieces stored so far
        gprefix: dict[int, int] = {}               # line -> guaranteed prefix length
        nt_pend: dict[int, list[Piece]] = {}       # thread -> NT pieces awaiting its fence
        flushed: dict[int, dict[int, int]] = {}    # thread -> line -> pieces its flushes cover
        flush_only = opts.model == "pmreorder"
        fl_any: dict[int, int] = {}                # pmreorder: line -> pieces any flush covered
        buffered: dict[int, list[Piece]] = {}      # eadr: thread -> pieces since its drain point
        if eadr and len({ev.tid for ev in self.events if ev.kind in ("store", "ntstore")}) > 1:
            image.out_of_order_cached = True
        in_flight: list[int] = []
        last_done: int | None = None
        pid = 0
        index = 0

        def point(i: int, kind: str) -> CrashPoint:
            nonlocal index
            if i < skip_before or (wanted is not None and not wanted(index)) or \
                    (unwanted_at is not None and unwanted_at(i)):
                cp = CrashPoint(index, i, kind, in_flight[-1] if in_flight else None, tuple(in_flight),
                                last_done, (), 1, [], image.fp, line_size)
                index += 1
                return cp
            if eadr:
                units = tuple(Unit("thread", None, tuple(buffered[t])) for t in sorted(buffered))
            elif flush_only:
                # pmreorder: a line's pieces some flush covered (a prefix of its pending ones) only
                units = tuple(Unit("line", line * line_size, tuple(pend[line][:fl_any.get(line, 0) - gprefix.get(line, 0)]))
                              for line in sorted(pend) if fl_any.get(line, 0) > gprefix.get(line, 0))
            else:
                units = tuple(Unit("line", line * line_size, tuple(pend[line])) for line in sorted(pend))
            if not eadr:
                if nt_pend:
                    nts = sorted((p for ps in nt_pend.values() for p in ps), key=lambda p: p.id)
                    units += tuple(Unit("nt", p.line * line_size, (p,)) for p in nts)
            legal = 1
            for u in units:
                legal *= u.choices
            patch = image.commit()
            cp = CrashPoint(index, i, kind, in_flight[-1] if in_flight else None, tuple(in_flight),
                            last_done, units, legal, patch, image.fp, line_size)
            index += 1
            return cp

        def guarantee_line(line: int, count: int, out: list[Piece]) -> None:
            g = gprefix.get(line, 0)
            if count <= g:
                return
            pieces = pend[line]
            out.extend(pieces[:count - g])
            rest = pieces[count - g:]
            if rest:
                pend[line] = rest
            else:
                del pend[line]
            gprefix[line] = count

        def drain(tid: int) -> None:
            done = buffered.pop(tid, None)
            if done:
                image.guarantee(done)

        locked: set[int] = set()                   # eadr: threads whose last event is a locked fence
        for i, ev in enumerate(self.events):
            kind = ev.kind
            after_locked = ev.tid in locked
            if eadr:
                if kind == "fence" and ev.sub == "locked":
                    locked.add(ev.tid)
                else:
                    locked.discard(ev.tid)
            if kind == "store" or kind == "ntstore":
                if ev.off is None or ev.region is None:
                    self.unplaced += 1
                    continue
                nt = kind == "ntstore"
                data, addr, tid = ev.data, ev.addr, ev.tid
                unordered = ev.sub in UNORDERED_ORIGINS and not nt
                durable = ev.sub in DURABLE_ORIGINS
                region = ev.region
                img = (offsets[region] if region < len(offsets) else 0) + ev.off - addr
                for part, (a, b) in enumerate(split_points(addr, ev.size, unit)):
                    line = a // line_size
                    p = Piece(pid, i, part, tid, nt, region, ev.off + (a - addr), a,
                              data[a - addr:b - addr], line, a // unit, unordered, img + a)
                    pid += 1
                    record(p)
                    if eadr:
                        buffered.setdefault(tid, []).append(p)
                        if after_locked or durable:
                            drain(tid)             # the locked instruction's own store
                    elif nt:
                        nt_pend.setdefault(tid, []).append(p)
                    else:
                        lst = pend.get(line)
                        if lst is None:
                            pend[line] = [p]
                        else:
                            lst.append(p)
                        total[line] = total.get(line, 0) + 1
                        if durable:
                            newly = []
                            guarantee_line(line, total[line], newly)
                            image.guarantee(newly)
            elif kind == "fence":
                yield point(i, "fence")
                if eadr:
                    drain(ev.tid)
                    continue
                newly: list[Piece] = []
                for line, count in flushed.pop(ev.tid, {}).items():
                    guarantee_line(line, count, newly)
                newly.extend(nt_pend.pop(ev.tid, ()))
                if newly:
                    newly.sort(key=lambda p: p.id)
                    image.guarantee(newly)
            elif kind == "flush":
                if eadr:
                    continue
                line = ev.addr // line_size
                count = total.get(line, 0)
                if clflush_now and ev.sub == "clflush":
                    yield point(i, "clflush")
                    newly = []
                    guarantee_line(line, count, newly)
                    image.guarantee(newly)
                elif count:
                    cover = flushed.setdefault(ev.tid, {})
                    if count > cover.get(line, 0):
                        cover[line] = count
                if count > fl_any.get(line, 0):     # (after the clflush's crash point: it precedes the flush)
                    fl_any[line] = count
            elif kind == "op_begin":
                yield point(i, "op_begin")
                if eadr:
                    drain(ev.tid)
                in_flight.append(ev.addr)
            elif kind == "op_end":
                if ev.addr in in_flight:
                    in_flight.remove(ev.addr)
                last_done = ev.addr
                yield point(i, "op_end")
                if eadr:
                    drain(ev.tid)
        self.pieces = pid
        yield point(len(self.events), "end")
