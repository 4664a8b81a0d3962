"""Post-crash images: the guaranteed base image, its fingerprint, and state overlays.

Owns: the bytes. The simulator tells it which pieces became guaranteed (in trace order); it keeps
the image of every imaged region (crashcheck.crashsim.layout: region 0 at offset 0, the others after it;
a piece's `img` is its image offset) at the current crash point's guaranteed state, a
fingerprint of that image, and
the list of slots changed since the previous crash point (the runner's base patch). A crash state
is never materialised as a whole image: `overlay` returns only the slots the state's kept pieces
change, already merged with the base, plus the fingerprint delta.

Slots. A slot is one aligned failure-atomic unit (8 bytes by default). Every piece lies inside
one slot, so images are compared, hashed and patched slot by slot.

Fingerprint. fp(image) = sum over slots of H(slot, bytes) - H(slot, initial bytes), mod 2^128,
with H a 128-bit BLAKE2b. It changes incrementally (only touched slots are rehashed), equal images
have equal fingerprints, and two different images collide with probability about 2^-128.

Out-of-order durability (why there is slot history). Within one cache line pieces become durable
in trace order. Non-temporal (NT) stores break that: an NT piece is durable at its thread's next
fence, independently of the cached pieces of its line, and NT pieces of two threads are durable at
two different fences. The image is defined as "the initial image with every persisted piece
applied in trace order", so a piece that becomes durable (or is kept in a state) after a *later*
piece of the same slot must not overwrite the later piece's bytes. Only slots that ever received
an NT piece can see this, so only those slots keep a history (every piece stored to the slot from
its first NT piece on); `mask` trims a piece by the guaranteed later pieces of its slot. A piece
stored before the slot's first NT piece can only be overtaken by a piece from that history: an
earlier-stored cached piece of the same line is always guaranteed no later than it.
"""
from __future__ import annotations

import mmap
import struct
from hashlib import blake2b
from typing import Iterable

from .persistency import Piece

FP_MOD = 1 << 128
WRITE = struct.Struct("<QI")   # runner write record head: offset, length (docs/runner-protocol.md)

Writes = list[tuple[int, bytes]]   # (image offset, bytes), sorted, non-overlapping


def slot_hash(off: int, data: bytes) -> int:
    """H(slot, bytes): 128-bit hash of a slot's contents at its offset."""
    return int.from_bytes(blake2b(off.to_bytes(8, "little") + data, digest_size=16).digest(), "little")


def encode_writes(writes: Iterable[tuple[int, bytes]]) -> bytes:
    """Writes in the runner's wire format: (u64 offset, u32 length, bytes)*."""
    pack = WRITE.pack
    return b"".join(pack(off, len(data)) + data for off, data in writes)


def decode_writes(blob: bytes) -> Writes:
    """Inverse of encode_writes (tests and tools)."""
    out, pos = [], 0
    while pos < len(blob):
        off, n = WRITE.unpack_from(blob, pos)
        pos += WRITE.size
        out.append((off, bytes(blob[pos:pos + n])))
        pos += n
    return out


def apply_writes(image: bytearray, writes: Iterable[tuple[int, bytes]]) -> bytearray:
    for off, data in writes:
        image[off:off + len(data)] = data
    return image


def _coalesce(slots: list[tuple[int, bytes]]) -> Writes:
    """Merge slot writes (sorted by offset) that touch into longer runs."""
    out: Writes = []
    for off, data in slots:
        if out and out[-1][0] + len(out[-1][1]) == off:
            out[-1] = (out[-1][0], out[-1][1] + data)
        else:
            out.append((off, data))
    return out


class ImageState:
    """The image of the regions REGIONS at the current crash point's guaranteed state (pieces of
    other regions are not imaged: they count in states, and leave the image as it is).

    base    the image (bytearray or private mapping of the layout's size): initial image plus
            guaranteed pieces.
    fp      its fingerprint (0 for the initial image).
    """

    def __init__(self, initial: bytes | bytearray | mmap.mmap, unit: int,
                 regions: frozenset[int] = frozenset({0})) -> None:
        # A private mapping is already a copy-on-write copy (crashcheck.crashsim.simulate reads region
        # images into anonymous ones); anything else is copied.
        self.base: bytearray | mmap.mmap = (initial if isinstance(initial, mmap.mmap)
                                            else bytearray(initial))
        self.size = len(self.base)
        self.unit = unit
        self.regions = regions
        self.fp = 0
        self._dirty: dict[int, bytes] = {}          # slot -> bytes before its first change since commit
        self._history: dict[int, list[Piece]] = {}  # slot -> pieces since its first NT piece
        # Pieces may become durable out of trace order: NT pieces always, cached pieces when
        # several threads' store buffers drain independently (eADR). A slot keeps a history from
        # its first such piece on, so an older piece never overwrites a newer durable one.
        self.out_of_order_cached = False

    def _check(self, p: Piece) -> None:
        if p.img + len(p.data) > self.size:
            raise ValueError(f"piece {p.describe()} lies outside the image "
                             f"({self.size} bytes)")

    def record(self, p: Piece) -> None:
        """Note a new piece (called for every piece, in trace order)."""
        if p.region not in self.regions:
            return
        self._check(p)
        slot = p.img - p.img % self.unit
        hist = self._history.get(slot)
        if hist is None:
            if not p.nt and not self.out_of_order_cached:
                return
            hist = self._history[slot] = []
        hist.append(p)

    def masked(self, p: Piece) -> bool:
        """Whether a later guaranteed piece may cut P (its slot keeps a history); else mask(P)
        is P's whole range."""
        return (p.img - p.img % self.unit) in self._history

    def mask(self, p: Piece) -> list[tuple[int, int]]:
        """Byte ranges [a, b) (image offsets) of P not overwritten by a later guaranteed piece."""
        start, end = p.img, p.img + len(p.data)
        hist = self._history.get(start - start % self.unit)
        if hist is None:
            return [(start, end)]
        ranges = [(start, end)]
        for q in hist:
            if q.id > p.id and q.g:
                qa, qb = q.img, q.img + len(q.data)
                cut = []
                for a, b in ranges:
                    if qb <= a or qa >= b:
                        cut.append((a, b))
                        continue
                    if a < qa:
                        cut.append((a, qa))
                    if qb < b:
                        cut.append((qb, b))
                ranges = cut
        return ranges

    def guarantee(self, pieces: Iterable[Piece]) -> None:
        """Make PIECES (in trace order) durable: mark them and write them into the base."""
        base, unit, dirty, history = self.base, self.unit, self._dirty, self._history
        for p in pieces:
            if p.region in self.regions:
                for a, b in self.mask(p):
                    slot = a - a % unit
                    if slot not in dirty:
                        dirty[slot] = bytes(base[slot:slot + unit])
                    base[a:b] = p.data[a - p.img:b - p.img]
                # A durable piece covering its whole slot masks every older piece of the slot
                # entirely, and older pieces never mask newer ones: drop them from the history,
                # so a slot written over and over with NT stores keeps a short one.
                hist = history.get(p.img - p.img % unit)
                if hist is not None and len(p.data) == unit and hist[0].id < p.id:
                    hist[:] = [q for q in hist if q.id >= p.id]
            p.g = True

    def commit(self) -> Writes:
        """Fold the changes since the last commit into fp; return them as writes (the base patch)."""
        changed = []
        base, unit = self.base, self.unit
        fp = self.fp
        for slot in sorted(self._dirty):
            old = self._dirty[slot]
            new = bytes(base[slot:slot + unit])
            if new != old:
                fp += slot_hash(slot, new) - slot_hash(slot, old)
                changed.append((slot, new))
        self._dirty.clear()
        self.fp = fp % FP_MOD
        return _coalesce(changed)

    def overlay(self, pieces: Iterable[Piece]) -> tuple[int, Writes]:
        """Fingerprint delta and writes of base + PIECES (pending pieces, in trace order)."""
        base, unit, history, regions = self.base, self.unit, self._history, self.regions
        slots: dict[int, bytearray] = {}
        for p in pieces:
            if p.region not in regions:
                continue
            img, data = p.img, p.data
            slot = img - img % unit
            if slot not in history:
                # The common case, mask(p) without the call: no later piece can cut P, and every
                # piece lies inside one slot.
                buf = slots.get(slot)
                if buf is None:
                    buf = slots[slot] = bytearray(base[slot:slot + unit])
                buf[img - slot:img - slot + len(data)] = data
                continue
            for a, b in self.mask(p):
                slot = a - a % unit
                buf = slots.get(slot)
                if buf is None:
                    buf = slots[slot] = bytearray(base[slot:slot + unit])
                buf[a - slot:b - slot] = data[a - img:b - img]
        delta = 0
        changed = []
        for slot in sorted(slots) if len(slots) > 1 else slots:
            old = base[slot:slot + unit]
            new = slots[slot]
            if new != old:
                new = bytes(new)
                delta += slot_hash(slot, new) - slot_hash(slot, bytes(old))
                changed.append((slot, new))
        return delta, (_coalesce(changed) if len(changed) > 1 else changed)
