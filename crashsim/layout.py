"""Where each PM region of a trace sits in a post-crash image.

Owns: the image layout. A post-crash image is one byte range that holds every registered region:
region 0 (the pool the checker maps at the pool address) at offset 0, then each further region
(a second pool file, a libpmem mapping, memory registered with crashcheck_register_pm) after the
previous one, at the next offset that is congruent to the region's base address modulo a page.
So an image offset has the same alignment as the address it stands for: the simulator's slots
and cache lines, and the lazy runner's lines, are the same in the image as in the program.

The checker runner maps the whole image (its pool size is `total`); the driver is told the sizes
of the regions past region 0 (`serve --region SIZE`, docs/trees.md) and gives recovery each one
when recovery registers it again (instrument/runtime/rt_check_regions.c).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

PAGE = 4096


@dataclass(frozen=True)
class Layout:
    """Per region (in registration order): its base address, size, and offset in the image."""
    bases: tuple[int, ...]
    sizes: tuple[int, ...]
    offsets: tuple[int, ...]

    @property
    def total(self) -> int:
        """Bytes of the image: the end of its last region, rounded up to a page past region 0
        (region 0 alone keeps its own size, the pool size every tool already agrees on)."""
        if len(self.sizes) <= 1:
            return self.sizes[0] if self.sizes else 0
        end = self.offsets[-1] + self.sizes[-1]
        return -(-end // PAGE) * PAGE

    def serve_args(self) -> list[str]:
        """A driver's `serve` options that tell it where the regions past region 0 lie."""
        return [arg for off, size in zip(self.offsets[1:], self.sizes[1:])
                for arg in ("--region", f"{off}:{size}")]


def layout(regions: Sequence[tuple[int, int]]) -> Layout:
    """The layout of REGIONS, (base, size) pairs in registration order."""
    bases, sizes, offsets = [], [], []
    end = 0
    for index, (base, size) in enumerate(regions):
        if index == 0:
            off = 0
        else:
            page_start = -(-end // PAGE) * PAGE
            off = page_start + base % PAGE
        bases.append(base)
        sizes.append(size)
        offsets.append(off)
        end = off + size
    return Layout(tuple(bases), tuple(sizes), tuple(offsets))


def trace_layout(trace) -> Layout:
    """The layout of TRACE's registered regions."""
    return layout([(r.base, r.size) for r in trace.regions])
