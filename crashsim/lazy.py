"""Lazy crash-state exploration: a crash point's states are told apart only by what recovery reads.

Owns: the plan of one crash point (its undetermined lines, grouped, with every legal content of
each group) and the search over the runner's executions (crashsim/runner/lazy.c does the
branching in the checker child).

A group is the set of pending units whose pieces share cache lines (crashcheck.crashsim.states.StateCodec
groups them the same way: a line's cached pieces with its NT pieces; eADR's thread units all
together). Its variants are its units' joint choices, in mixed-radix order (the first unit varies
slowest), each with the contents of the group's lines. One execution starts every group at
variant 0; at the first read of bytes the still-allowed variants of a group disagree on, it
branches into classes of variants that agree on those bytes, takes the class its decision list
names (class 0 past the list's end) and reports every branch point's number of classes. The
search sends the sibling decision lists as new executions, so the executions are the leaves of
the decision tree, and each leaf's class (the product over groups of its allowed variants) is a
set of crash states the whole check could not tell apart. The classes of a finished search
partition the legal states: a point is complete when the covered count equals its legal count.

Why re-execution instead of forking inside the child (as Jaaru does): every execution is then
an ordinary runner child with one answer, so a leaf that crashes, hangs or exhausts memory is
reported and limited like any state, and the runner's deduplication, restarts and batching apply
unchanged. The price is re-running the shared prefix of recovery once per leaf.
"""
from __future__ import annotations

import bisect
import functools
import hashlib
import os
import itertools
import struct
from collections import deque
from dataclasses import dataclass, field
from typing import Iterator, Sequence

from .image import ImageState
from .simulate import CrashPoint
from .states import exhaustive, legal_count, unit_groups

EAGER_BELOW = int(os.environ.get("CRASHCHECK_LAZY_EAGER_BELOW", "4"))
# A crash point with at most this many legal states is checked state by state instead (the image
# cache answers most of them: they repeat images of earlier points, which a lazy execution, run
# before anything is known, cannot reuse); it is still covered completely.
MAX_VARIANTS = 4096          # a group with more joint choices is not explored lazily
MAX_SPEC_BYTES = 1 << 20     # nor a crash point whose plan would be larger than this per execution
# Executions per crash point: the caller's state limit (crashcheck.crashsim.states.DEFAULT_LIMIT unless told;
# crashcheck.crashsim.explore). A point whose search reaches it is partial and gets the bounded sample's
# states its classes did not cover, so it is never checked less than bounded would check it.
# A search also stops as soon as it cannot finish within its cap (PointSearch.hopeless), and a
# point whose pending lines include those of an earlier point that came out partial
# (PartialShapes) gets only PROBE executions: enough to finish a tree that small, else it is
# partial at once and its executions go to the bounded sample instead (why: a point that ends
# partial cost the whole cap and the sample; code that leaves lines unflushed made lazy several
# times slower than bounded for no more coverage it could state).
PROBE = int(os.environ.get("CRASHCHECK_LAZY_PROBE", "2"))
STORED_BODY = 0xFFFFFFFF     # a spec's group count naming the runner's stored body (LazyPlan.spec_stored)


@functools.lru_cache(maxsize=256)
def _variants(radices: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Every joint choice of units with RADICES, in mixed-radix order (shared: read only)."""
    return list(exhaustive(radices))


@dataclass
class Group:
    units: tuple[int, ...]                 # unit indices in the crash point
    radices: tuple[int, ...]               # their pending piece counts
    lines: list[int] = field(default_factory=list)   # pool offsets of the lines it writes
    variants: list[tuple[int, ...]] = field(default_factory=list)

    def kept(self, v: int) -> int:
        return sum(self.variants[v])


@dataclass
class Leaf:
    """One finished execution: its decisions, the class of states it stands for, and the one
    concrete member chosen to represent it (per group the variant that keeps the most pieces)."""
    decisions: tuple[int, ...]
    branches: tuple[int, ...]
    allowed: list[list[int] | None]        # per group; None: every variant
    covers: int                            # states in the class (0 if it is not known)
    choice: tuple[int, ...]
    groups: list[Group] = field(default_factory=list, repr=False)
    nunits: int = 0

    def contains(self, choice: Sequence[int]) -> bool:
        """Whether crash state CHOICE is a member of the class (never, if the class is not known)."""
        if not self.covers:
            return False
        for g, a in zip(self.groups, self.allowed):
            if a is None:
                continue
            v = 0
            for j, m in zip(g.units, g.radices):      # mixed radix, first unit slowest
                v = v * (m + 1) + choice[j]
            if v not in a:
                return False
        return True

    def members(self) -> Iterator[tuple[int, ...]]:
        """Every crash state (choice vector) of the class (for tests: small points only)."""
        per_group = []
        for g, a in zip(self.groups, self.allowed):
            vs = g.variants or list(exhaustive(g.radices))
            per_group.append([vs[v] for v in a] if a is not None else vs)
        for combo in itertools.product(*per_group):
            choice = [0] * self.nunits
            for g, ks in zip(self.groups, combo):
                for j, k in zip(g.units, ks):
                    choice[j] = k
            yield tuple(choice)


class SingleLeaf(Leaf):
    """The class of one state checked on its own: its allowed variants are worked out only when
    asked (every state of a point's bounded sample gets one; few are ever asked)."""

    def __init__(self, choice: tuple[int, ...], groups: list[Group], nunits: int) -> None:
        self.decisions, self.branches, self.covers = (), (), 1
        self.choice, self.groups, self.nunits = choice, groups, nunits
        self._allowed: list[list[int] | None] | None = None

    @property
    def allowed(self) -> list[list[int] | None]:
        if self._allowed is None:
            allowed: list[list[int] | None] = []
            for g in self.groups:
                v = 0
                for j, m in zip(g.units, g.radices):      # mixed radix, first unit slowest
                    v = v * (m + 1) + self.choice[j]
                allowed.append([v])
            self._allowed = allowed
        return self._allowed


class LazyPlan:
    """The lazy plan of one crash point (valid while the image is at CP's guaranteed state)."""

    def __init__(self, cp: CrashPoint, image: ImageState, cache: dict | None = None) -> None:
        self.cp = cp
        self._cache = cache                    # group contents of earlier points (_contents)
        ls = cp.line_size
        self.groups: list[Group] = []
        self.sent: list[int] = []              # groups that go to the runner (they touch the pool)
        self.feasible = True
        size = 12
        for idxs in unit_groups(cp):
            g = Group(idxs, tuple(cp.units[j].choices - 1 for j in idxs))
            if legal_count(g.radices) > MAX_VARIANTS:
                self.feasible = False
                self.groups.append(g)
                continue
            g.variants = _variants(g.radices)
            g.lines = sorted({p.img - p.img % ls for j in idxs for p in cp.units[j].pieces
                              if p.region in image.regions})
            self.groups.append(g)
            if g.lines:
                self.sent.append(len(self.groups) - 1)
                size += 8 + 8 * len(g.lines) + len(g.variants) * len(g.lines) * ls
        if size > MAX_SPEC_BYTES:
            self.feasible = False
        self._image = image
        self._encoded: tuple[bytes, dict[int, list[bytes]]] | None = None

    # The variants' contents are encoded on first use, not for every crash point: most points are
    # checked state by state (EAGER_BELOW) or answered by ReadMemo, and never need them.
    @property
    def _body(self) -> bytes:
        if self._encoded is None:
            self._encoded = self._encode(self._image) if self.feasible else (b"", {})
        return self._encoded[0]

    @property
    def contents(self) -> dict[int, list[bytes]]:
        """Pending line index -> its distinct legal contents (variant 0's first)."""
        self._body
        return self._encoded[1]

    @property
    def key(self) -> tuple:
        """What an execution's answer depends on besides the guaranteed image and the followup."""
        return (hashlib.blake2b(self._body, digest_size=16).digest(), len(self.cp.units),
                tuple((g.units, g.radices) for g in self.groups))

    def _encode(self, image: ImageState) -> tuple[bytes, dict[int, list[bytes]]]:
        ls = self.cp.line_size
        parts, distinct = [], {}
        for gi in self.sent:
            g = self.groups[gi]
            contents, per_line = self._contents(g, image)
            for off, options in zip(g.lines, per_line):
                distinct[off // ls] = options
            parts.append(struct.pack("<II", len(g.lines), len(g.variants))
                         + b"".join(struct.pack("<Q", off) for off in g.lines) + b"".join(contents))
        return b"".join(parts), distinct

    def _contents(self, g: Group, image: ImageState) -> tuple[list[bytes], list[list[bytes]]]:
        """Every variant's contents of G's lines (concatenated), and each line's distinct contents
        (variant 0's first); a variant's contents are the guaranteed lines with the
        variant's kept pieces written over them in trace order (the bytes a later guaranteed
        piece overwrote masked off, as ImageState.overlay does). A group with 4096 variants is
        common where code leaves lines unflushed, so this is done without overlay's fingerprints,
        incrementally along a unit's prefixes, and once for a group that an earlier crash point
        of the same exploration had with the same pieces, masks and guaranteed bytes (CACHE)."""
        ls, units = self.cp.line_size, self.cp.units
        base = b"".join(bytes(image.base[off:off + ls]) for off in g.lines)
        regions = image.regions
        masks = {}                 # piece id -> its unmasked ranges, if a later durable piece may cut it
        for j in g.units:
            for p in units[j].pieces:
                if p.region in regions and image.masked(p):
                    masks[p.id] = tuple(image.mask(p))
        key = None
        if self._cache is not None:
            # Within one trace a piece id names its bytes and place, and the units' choices
            # follow from their pieces: ids, cut ranges and the guaranteed bytes decide the
            # contents (cheaper to hash than the bytes they write, looked up at every point)
            # (and a unit's orders: a point restricted to some of its states, crashsim/keeping.py,
            # has the same pieces with fewer choices)
            key = (tuple(tuple(p.id for p in units[j].pieces) for j in g.units),
                   tuple(units[j].orders for j in g.units), tuple(masks.items()), base)
            hit = self._cache.get(key)
            if hit is not None:
                return hit
        at = {off: i * ls for i, off in enumerate(g.lines)}
        writes: dict[int, list[tuple[int, bytes]]] = {}     # piece id -> (position, bytes)
        for j in g.units:
            for p in units[j].pieces:
                out = writes[p.id] = []
                if p.region not in regions:
                    continue
                # (a piece cut whole by later durable ones has no range left: () is its mask)
                for a, b in masks[p.id] if p.id in masks else ((p.img, p.img + len(p.data)),):
                    while a < b:                             # a range may span lines
                        line = a - a % ls
                        end = min(b, line + ls)
                        out.append((at[line] + a - line, p.data[a - p.img:end - p.img]))
                        a = end
        if len(g.units) == 1 and units[g.units[0]].orders is None:
            # one unit persisting as a prefix: variant k is variant k-1 plus piece k
            buf, contents = bytearray(base), [base]
            for p in units[g.units[0]].pieces:
                for pos, data in writes[p.id]:
                    buf[pos:pos + len(data)] = data
                contents.append(bytes(buf))
        else:
            contents = []
            for ks in g.variants:
                kept = [p for j, k in zip(g.units, ks) for p in units[j].kept(k)]
                kept.sort(key=lambda p: p.id)
                buf = bytearray(base)
                for p in kept:
                    for pos, data in writes[p.id]:
                        buf[pos:pos + len(data)] = data
                contents.append(bytes(buf))
        per_line = [list(dict.fromkeys(c[i * ls:(i + 1) * ls] for c in contents)) for i in range(len(g.lines))]
        if key is not None:
            if len(self._cache) >= 256:      # memory: up to 256 KiB per group
                self._cache.clear()
            self._cache[key] = contents, per_line
        return contents, per_line

    def variant_contents(self, gi: int) -> list[bytes]:
        """Every variant's contents of group GI's lines, concatenated in line order (a reader of
        recovery's reads outside the runner: harness/check/program_lazy.py)."""
        return self._contents(self.groups[gi], self._image)[0]

    def pending_lines(self) -> set[int]:
        """The pool lines (indices) whose contents the crash state decides."""
        ls = self.cp.line_size
        return {off // ls for gi in self.sent for off in self.groups[gi].lines}

    def spec(self, decisions: Sequence[int]) -> bytes:
        """The runner's spec for one execution with DECISIONS."""
        return (struct.pack("<III", self.cp.line_size, len(self.sent), len(decisions))
                + struct.pack(f"<{len(decisions)}H", *decisions) + self._body)

    def body(self) -> bytes:
        """The groups of every execution's spec, for Runner.queue_lazy_body."""
        return struct.pack("<II", self.cp.line_size, len(self.sent)) + self._body

    def spec_stored(self, decisions: Sequence[int]) -> bytes:
        """The spec of one execution with DECISIONS whose groups are the runner's stored body
        (this plan's, sent with Runner.queue_lazy_body before it)."""
        return (struct.pack("<III", self.cp.line_size, STORED_BODY, len(decisions))
                + struct.pack(f"<{len(decisions)}H", *decisions))

    def leaf(self, decisions: tuple[int, ...], log: dict | None) -> Leaf:
        """The class an execution stands for, from its answer's exploration LOG (None: the
        execution left no log, e.g. it killed the runner: its class is not known)."""
        allowed: list[list[int] | None] = [None] * len(self.groups)
        nunits = len(self.cp.units)
        if log is None or log.get("diverged"):
            return Leaf(decisions, (), allowed, 0, self._choice(allowed), self.groups, nunits)
        for sent_index, variants in log.get("allowed", []):
            allowed[self.sent[sent_index]] = list(variants)
        covers = 1
        for g, a in zip(self.groups, allowed):
            covers *= legal_count(g.radices) if a is None else len(a)
        return Leaf(decisions, tuple(log.get("branches", ())), allowed, covers, self._choice(allowed),
                    self.groups, nunits)

    def single(self, choice: Sequence[int]) -> Leaf:
        """The one-state class of CHOICE (a state checked on its own)."""
        return SingleLeaf(tuple(choice), self.groups, len(self.cp.units))

    def _choice(self, allowed: list[list[int] | None]) -> tuple[int, ...]:
        """The class member with the fewest lost pieces (first in order among equals)."""
        choice = [0] * len(self.cp.units)
        for g, a in zip(self.groups, allowed):
            if a is None:
                ks = g.radices
            else:
                ks = g.variants[max(a, key=lambda v: (g.kept(v), -v))]
            for j, k in zip(g.units, ks):
                choice[j] = k
        return tuple(choice)


def children(decisions: tuple[int, ...], branches: Sequence[int]) -> list[tuple[int, ...]]:
    """The sibling executions an execution with DECISIONS that met BRANCHES opens: at every branch
    point past its own decisions, each class other than the first it took."""
    full = tuple(decisions) + (0,) * max(0, len(branches) - len(decisions))
    out = []
    for i in range(len(decisions), len(branches)):
        for c in range(1, branches[i]):
            out.append(full[:i] + (c,))
    return out


@dataclass
class PointSearch:
    """The state of one crash point's search (crashcheck.crashsim.explore drives it)."""
    plan: LazyPlan
    frontier: deque = field(default_factory=lambda: deque([()]))
    executions: int = 0
    covered: int = 0
    unknown: int = 0          # executions whose class could not be known (no log, diverged, truncated)

    @property
    def complete(self) -> bool:
        return not self.frontier and self.unknown == 0 and self.covered == self.plan.cp.legal

    def hopeless(self, cap: int) -> bool:
        """Whether the search cannot finish within CAP executions: every open branch is at least
        one more execution, so the point ends partial whatever runs next."""
        return self.executions + len(self.frontier) > cap

    def done(self, decisions: tuple[int, ...], log: dict | None) -> Leaf:
        """Take in one execution's answer: its leaf, and the executions it opens."""
        leaf = self.plan.leaf(decisions, log)
        self.executions += 1
        self.covered += leaf.covers
        if log is None or log.get("diverged") or log.get("truncated"):
            self.unknown += 1
        self.frontier.extend(children(decisions, leaf.branches))
        return leaf


def decode(spec: bytes) -> tuple[list[int], list[tuple[list[int], list[bytes]]]]:
    """(decisions, [(line offsets, variant contents)]) of a spec (tests, debugging)."""
    ls, ngroups, ndec = struct.unpack_from("<III", spec)
    pos = 12
    decisions = list(struct.unpack_from(f"<{ndec}H", spec, pos))
    pos += 2 * ndec
    groups = []
    for _ in range(ngroups):
        nl, nv = struct.unpack_from("<II", spec, pos)
        pos += 8
        offs = list(struct.unpack_from(f"<{nl}Q", spec, pos))
        pos += 8 * nl
        size = nl * ls
        groups.append((offs, [spec[pos + v * size:pos + (v + 1) * size] for v in range(nv)]))
        pos += nv * size
    return decisions, groups


def bare_spec(line_size: int) -> bytes:
    """The spec of a LAZY request without undetermined lines: one state checked on its own, with
    the read log of a lazy execution (so ReadMemo can reuse its answer)."""
    return struct.pack("<III", line_size, 0, 0)


@dataclass
class Remembered:
    """One finished execution: its answer holds for every image with the same bytes where its
    check read (SPANS)."""
    followup: str
    # (first byte, end, byte mask or None: every byte, the bytes read there: bytes, or with a
    # mask the image's bytes as an int ANDed with it)
    spans: tuple[tuple[int, int, int | None, bytes | int], ...]
    lines: frozenset[int]                  # every line the check read any byte of
    masks: dict[int, int]                  # line read in part -> byte mask (0xff per byte read)
    sid: int
    result: object
    miss: int = 0                          # the span that differed last time: compared first


class ReadMemo:
    """Answers of earlier executions, by the bytes each one's check read (the runner's "read" and
    "partial" logs): a later crash point whose every legal image has the same bytes there as an
    earlier execution's image is answered by that execution, without running (the check reads the
    same bytes, so it does the same thing). Jaaru's lazy exploration runs once per crash point at
    least; most crash points of a tree operation change bytes recovery never reads (a new node
    before it is linked, a slot beside the header it reads), so this is where lazy saves most
    runs. A pending line may be read where all its legal contents agree.

    Sound as far as the check's reads are seen: everything the instrumented code reads is (the
    same assumption lazy branching makes); only answers of finished checks (status ok) are kept,
    the most recent KEEP of them, and none whose reads span more than MAX_LINES lines (comparing
    them per crash point would cost more than it saves)."""

    KEEP = 32
    MAX_LINES = 8192

    def __init__(self, line_size: int) -> None:
        self.ls = line_size
        self.entries: deque[Remembered] = deque(maxlen=self.KEEP)
        self.hits = 0

    @staticmethod
    def _read(base, lo: int, hi: int, mask: int | None, writes) -> bytes | int:
        """What a check that read MASK of bytes [LO, HI) saw in BASE with WRITES over it."""
        chunk = base[lo:hi]
        if writes:
            chunk = bytearray(chunk)
            for off, data in writes:
                if off < hi and off + len(data) > lo:
                    a, b = max(off, lo), min(off + len(data), hi)
                    chunk[a - lo:b - lo] = data[a - off:b - off]
        return chunk if mask is None else int.from_bytes(chunk, "little") & mask

    def _same(self, e: Remembered, base, writes) -> bool:
        """Whether BASE with WRITES has E's bytes wherever E's check read."""
        spans, read = e.spans, self._read
        lo, hi, mask, value = spans[e.miss]
        if read(base, lo, hi, mask, writes) != value:
            return False
        for i, (lo, hi, mask, value) in enumerate(spans):
            if i != e.miss and read(base, lo, hi, mask, writes) != value:
                e.miss = i
                return False
        return True

    # bits -> bytes: _SPREAD[b] has byte k 0xff where bit k of b is set
    _SPREAD = [int.from_bytes(bytes(0xff if b >> k & 1 else 0 for k in range(8)), "little") for b in range(256)]

    def _masks(self, partial) -> dict[int, int]:
        """Byte masks (0xff per byte read, as an int) of the lines the log says were read in part."""
        out, spread = {}, self._SPREAD
        for line, bits in partial or ():
            bits, mask, shift = int(bits, 16), 0, 0
            while bits:
                mask |= spread[bits & 0xff] << shift
                bits >>= 8
                shift += 64
            out[int(line)] = mask
        return out

    def add(self, followup: str, log: dict | None, base, writes, sid: int, result) -> None:
        """Remember execution SID (RESULT, its answer's lazy LOG) that ran on BASE with WRITES
        ((offset, bytes) over it: the class member it stands for)."""
        runs = log.get("read") if log else None
        if runs is None or getattr(result, "status", None) != "ok" or log.get("diverged") or log.get("truncated"):
            return
        runs = tuple((int(f), int(c)) for f, c in runs)
        if sum(c for _, c in runs) > self.MAX_LINES:
            return
        ls = self.ls
        masks = self._masks(log.get("partial"))    # null (too many): every read line whole
        in_run: dict[int, list[int]] = {}          # run index -> its lines read in part
        firsts = [f for f, _ in runs]
        for line in masks:
            in_run.setdefault(bisect.bisect_right(firsts, line) - 1, []).append(line)
        whole = (1 << 8 * ls) - 1
        spans = []
        for k, (first, count) in enumerate(runs):
            mask = None
            if k in in_run:               # every byte of the run, less the unread ones of those lines
                mask = (1 << 8 * ls * count) - 1
                for line in in_run[k]:
                    mask ^= (whole ^ masks[line]) << 8 * ls * (line - first)
            lo, hi = first * ls, (first + count) * ls
            spans.append((lo, hi, mask, bytes(self._read(base, lo, hi, None, writes)) if mask is None
                          else self._read(base, lo, hi, mask, writes)))
        if not spans:
            return
        lines = frozenset(i for f, c in runs for i in range(f, f + c))
        self.entries.append(Remembered(followup, tuple(spans), lines, masks, sid, result))

    def find(self, followup: str, base, pending: set[int], writes=(),
             contents: dict[int, list[bytes]] | None = None) -> Remembered | None:
        """An earlier execution whose answer holds for the image BASE (plus WRITES) whatever the
        lines PENDING (line indices still undetermined) hold, or None. A pending line the
        execution read is allowed where every one of its legal CONTENTS (LazyPlan.contents) has
        the same bytes in what was read."""
        ls = self.ls
        for e in reversed(self.entries):
            if e.followup != followup:
                continue
            w = writes
            if pending and not pending.isdisjoint(e.lines):
                w = list(writes)
                for line in pending & e.lines:
                    options = contents.get(line) if contents is not None else None
                    mask = e.masks.get(line)
                    if not options or (mask is None and len(options) > 1) or (mask is not None and len(
                            {int.from_bytes(c, "little") & mask for c in options}) > 1):
                        break
                    w.append((line * ls, options[0]))
                else:
                    if self._same(e, base, w):
                        self.hits += 1
                        return e
                continue
            if self._same(e, base, w):
                self.hits += 1
                return e
        return None


class MemoGate:
    """Whether ReadMemo still pays, within one exploration, for each of its two lookups.

    The memo is not free: every lookup and every answer it keeps costs Python time, and a state
    checked on its own may only be looked up if it goes as a logged request whose answer is in
    before the image moves on to the next crash point, so the states of consecutive points cannot
    share a pipeline as bounded's do (one round trip per point). Where code leaves lines
    unflushed (Heart under x86-ADR), the checks read pending lines nearly everywhere and almost
    nothing is reused: 5% of single states and none of 1,337 whole points, for about 3x the wall
    time of the same exploration without it. So each lookup gets a trial (TRIAL lookups) and
    stays on only while it answers at least MIN_SHARE of them; once off it stays off for the
    exploration, so the decision depends on the trace alone (runs repeat). Off or on, coverage is
    the same: the memo only saves runs."""

    STATE_TRIAL, STATE_MIN_SHARE = 64, 0.10
    POINT_TRIAL, POINT_MIN_SHARE = 16, 0.05

    def __init__(self, always: bool = False) -> None:
        self.always = always       # tests, and CRASHCHECK_LAZY_MEMO=always: never turn it off
        self.state_tries = self.state_hits = self.point_tries = self.point_hits = 0
        self._states = self._points = True

    @staticmethod
    def _pays(tries: int, hits: int, trial: int, share: float) -> bool:
        return tries < trial or hits >= share * tries

    @property
    def states(self) -> bool:
        """Look single states up (and log their reads)."""
        return self._states

    @property
    def points(self) -> bool:
        """Look whole lazy points up."""
        return self._points

    @property
    def keeps(self) -> bool:
        """Keep answers at all: some lookup still uses them."""
        return self._states or self._points

    def count_state(self, hit: bool) -> None:
        self.state_tries += 1
        self.state_hits += hit
        if not self.always and not self._pays(self.state_tries, self.state_hits, self.STATE_TRIAL,
                                              self.STATE_MIN_SHARE):
            self._states = False

    def count_point(self, hit: bool) -> None:
        self.point_tries += 1
        self.point_hits += hit
        if not self.always and not self._pays(self.point_tries, self.point_hits, self.POINT_TRIAL,
                                              self.POINT_MIN_SHARE):
            self._points = False


class PartialShapes:
    """The pending lines of crash points whose search came out partial, within one exploration.

    A later point whose pending lines include all of one of them is predicted partial too: its
    crash states can differ in every line the earlier point's could and more, so recovery has at
    least as much to tell apart (the usual case: code that never flushes a line keeps it pending
    at every later point, and the classes only multiply). The prediction only lowers the point's
    cap to PROBE; a point that finishes within it is still complete."""

    KEEP = 16

    def __init__(self) -> None:
        self.shapes: deque[frozenset[int]] = deque(maxlen=self.KEEP)

    def add(self, lines: frozenset[int]) -> None:
        if lines and not any(s <= lines for s in self.shapes):
            self.shapes.append(lines)

    def predicts(self, lines: frozenset[int]) -> bool:
        return any(s <= lines for s in self.shapes)
