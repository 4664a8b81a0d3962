"""Program mode's lazy search (harness/check/program_lazy.py) on a made-up crash point: one cache
line with three pending 8-byte stores persisting in order (4 legal states), judged by a command
simulated here that logs its accesses as rt_readlog.c would. The classes partition the states,
bytes the command wrote before reading are its own, and a command that does not retrace its
parent's reads is caught."""
from __future__ import annotations

from types import SimpleNamespace

from crashcheck.crashsim.lazy import Group, SingleLeaf
from crashcheck.harness.check.program_lazy import search
from crashcheck.harness.check.program_reads import Access, Reads

LS = 64
STORES = [b"\x11" * 8, b"\x22" * 8, b"\x33" * 8]     # at bytes 0, 8, 16 of line 0


class Plan:
    """What program_lazy reads of a crashcheck.crashsim.lazy.LazyPlan, for one prefix unit of 3 stores."""

    def __init__(self) -> None:
        self.cp = SimpleNamespace(line_size=LS, units=[None], legal=4)
        self.groups = [Group((0,), (3,), [0], [(0,), (1,), (2,), (3,)])]
        self.sent = [0]

    def variant_contents(self, gi: int) -> list[bytes]:
        return [b"".join(STORES[:k]).ljust(LS, b"\0") for k in range(4)]

    def single(self, choice):
        return SingleLeaf(tuple(choice), self.groups, 1)


def _line(choice) -> bytes:
    return Plan().variant_contents(0)[choice[0]]


def _run(command):
    ran = []

    def judge(choice):
        ran.append(choice[0])
        return command(_line(choice))
    return search(Plan(), [0], 16, judge), ran


def test_a_command_that_reads_only_the_first_store_needs_two_runs():
    # reads bytes 0-7 only: "store 0 persisted or not" are the only two classes
    out, ran = _run(lambda img: [Reads([Access(0, 0, 8, False)])])
    assert out.complete(4) and out.executions == 2 and out.covered == 4
    assert ran == [3, 0]          # everything kept first, then the other class's fullest member
    assert sorted(leaf.covers for leaf in out.leaves) == [1, 3]


def test_reading_every_store_takes_every_state():
    out, ran = _run(lambda img: [Reads([Access(0, 0, 24, False)])])
    assert out.complete(4) and sorted(ran) == [0, 1, 2, 3]


def test_bytes_the_command_wrote_first_are_its_own():
    # recovery overwrites store 2's bytes, then the checker reads all three: only stores 0 and 1
    # tell states apart
    out, ran = _run(lambda img: [Reads([Access(0, 16, 8, True)]), Reads([Access(0, 0, 24, False)])])
    assert out.complete(4) and out.executions == 3
    # read before written: the read counts
    out, ran = _run(lambda img: [Reads([Access(0, 16, 8, False), Access(0, 16, 8, True), Access(0, 0, 24, False)])])
    assert out.complete(4) and out.executions == 4


def test_untrusted_reads_and_a_command_that_does_not_retrace_its_parent():
    out, ran = _run(lambda img: None)
    assert not out.complete(4) and out.unknown == 1 and out.executions == 1

    # a command whose first read depends on something other than the image (here: the run count)
    count = iter(range(100))

    def flaky(img):
        first = [Access(0, 0, 8, False)] if next(count) == 0 else [Access(0, 8, 8, False)]
        return [Reads(first + [Access(0, 0, 24, False)])]
    out, ran = _run(flaky)
    assert not out.complete(4) and out.unknown > 0
