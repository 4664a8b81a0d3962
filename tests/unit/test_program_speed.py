"""Program mode's per-image costs (issue 52: PMDK's obj_ulog_advanced TESTs, hundreds of pending
lines per crash point, an 8 MiB pool per judged image): pmreorder's prefix engine picks its
states in time linear in the stores, an image file holds only the pages with data, and shrinking
judges a few states per needed line, not one per pending line."""
from __future__ import annotations

import os
import time
from types import SimpleNamespace

from crashcheck.crashsim.layout import Layout
from crashcheck.crashsim.persistency import Piece
from crashcheck.crashsim.simulate import CrashPoint, Unit
from crashcheck.harness.check.engines import engine_states
from crashcheck.harness.check.program_check import ImageChecker, Verdict
from crashcheck.harness.check.program_shrink import shrink


def _point(lines: int, per_line: int, unordered: bool) -> CrashPoint:
    """LINES cache lines, each with PER_LINE pending 8-byte stores (one memcpy per line when
    UNORDERED: its pieces persist in any order), stored line after line."""
    units, pid = [], 0
    for line in range(lines):
        pieces = []
        for part in range(per_line):
            off = line * 64 + part * 8
            pieces.append(Piece(pid, line if unordered else pid, part, 0, False, 0, off, off, b"\1" * 8,
                                line, off // 8, unordered))
            pid += 1
        units.append(Unit("line", line * 64, tuple(pieces)))
    legal = 1
    for u in units:
        legal *= u.choices
    return CrashPoint(0, 0, "fence", None, (), None, tuple(units), legal)


def test_prefix_and_suffix_states_are_linear_in_the_stores():
    cp = _point(1000, 4, unordered=False)           # 4000 pending stores
    t0 = time.process_time()
    prefixes = engine_states(cp, "prefixes")
    suffixes = engine_states(cp, "suffixes")
    took = time.process_time() - t0
    assert len(prefixes) == 4001 and prefixes[0] == (0,) * 1000 and prefixes[-1] == (4,) * 1000
    assert prefixes[5] == (4, 1) + (0,) * 998     # the first five stores: line 0 whole, line 1's first
    assert len(suffixes) == 1001 and suffixes[1] == (0,) * 999 + (4,)
    # (stores x units: 4 M unit looks, seconds; linear: a few hundredths)
    assert took < 1.0, took
    memcpy = _point(200, 4, unordered=True)         # a memcpy a line: 200 stores, any order inside
    t0 = time.process_time()
    states = engine_states(memcpy, "prefixes")
    assert len(states) == 201 and states[1][0] == memcpy.units[0].choices - 1
    assert time.process_time() - t0 < 1.0


def test_image_file_holds_only_the_pages_with_data(tmp_path):
    size = 8 << 20
    base = bytearray(size)
    base[0:4096] = b"\7" * 4096                     # a header page
    checker = ImageChecker.__new__(ImageChecker)   # (the write alone: no trace, no commands)
    checker.layout, checker.files, checker._data_pages = Layout((0,), (size,), (0,)), [tmp_path / "image"], (None, [])
    writes = [(5 << 20, b"\x42" * 100), (100, b"\x01\x02")]
    checker.write(base, writes, base_fp=1)
    image = tmp_path / "image"
    want = bytearray(base)
    for off, data in writes:
        want[off:off + len(data)] = data
    assert image.read_bytes() == want
    # two pages written, the rest holes (the whole file used to be written: 2048 pages)
    assert os.stat(image).st_blocks * 512 <= 64 << 10


def test_shrinking_judges_a_few_states_per_needed_line():
    units = 256
    cp = SimpleNamespace(units=[SimpleNamespace(choices=2, orders=None) for _ in range(units)])
    fail = Verdict(False, "checker-failure", "the checker exited with status 1")
    judged = []

    def judge(choice):                              # fails while line 77 is lost
        judged.append(choice)
        return fail if choice[77] == 0 else Verdict(True)

    small, v, cut = shrink(cp, (0,) * units, fail, judge)
    assert small == tuple(0 if j == 77 else 1 for j in range(units)) and v is fail and not cut
    # one state per pending line would be 256; halving blocks: about 2 log2(256)
    assert len(judged) <= 20, len(judged)
