"""The checker runner's reused check process (crashsim/runner/worker.h and worker_*.c): state isolation.

One process checks eager state after state and restores itself in between. Whatever a check
changes (a global, the heap, the pool, an fd it leaves open, a timer, a signal handler) must not
reach the next state's check: every state must get the answer a fresh fork would give. Each test
runs with reuse on and off (CRASHCHECK_RUNNER_REUSE=0, a fork per state), which must agree, and
with reuse on both ways the worker finds the pages a check wrote: PAGEMAP_SCAN (Linux 6.7 and
later; where it is missing, both runs read /proc/self/pagemap) and reading /proc/self/pagemap
(CRASHCHECK_RUNNER_PAGEMAP_SCAN=0).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.runner_client import Runner
from runner_fixtures import build_fixture


POOL = 0x600000000000
SIZE = 1 << 20
OK, SEGV, FORK, LINGER, DIRTY, NAP, SMEAR, LEAKMAP = 0, 1, 16, 19, 22, 23, 24, 25


@pytest.fixture(scope="module")
def misbehave(tmp_path_factory) -> Path:
    return build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))


MODES = ["scan", "pagemap", "fork"]   # reuse restored with PAGEMAP_SCAN, with pagemap reads; no reuse


def start(prog: Path, mode: str | bool, timeout_ms: int = 5000) -> Runner:
    env = {k: v for k, v in os.environ.items() if k not in ("CRASHCHECK_TRACE", "CRASHCHECK_POOL_ADDR")}
    reuse = mode not in ("fork", False)
    env["CRASHCHECK_RUNNER_REUSE"] = "1" if reuse else "0"
    env["CRASHCHECK_RUNNER_PAGEMAP_SCAN"] = "0" if mode == "pagemap" else "1"
    r = Runner([str(prog), "serve", str(SIZE), str(timeout_ms), "128", "5"], pool_base=POOL,
               pool_size=SIZE, env=env)
    assert r.hello["reuse"] is reuse
    return r


def cmd(c: int, *words: int) -> bytes:
    return encode_writes([(0, struct.pack(f"<{1 + len(words)}Q", c, *words))])


@pytest.mark.parametrize("reuse", MODES)
def test_a_dirty_check_leaves_nothing_for_the_next(misbehave, tmp_path, reuse):
    """Globals, heap, pool, fds: every DIRTY state finds them as the first one did."""
    base = tmp_path / "base"
    base.write_bytes(struct.pack("<2Q", 0, 7))
    with start(misbehave, reuse) as r:
        r.load_base(base)
        res = r.check([(i, cmd(DIRTY), "") for i in range(20)])
        first = res[0][1]
        assert first.status == "ok", first
        assert first.result["count"] == 1 and first.result["note"] == "" and first.result["word1"] == 7
        assert all(x is first for _, x in res), [x.result for _, x in res if x is not first]
        # a state's own writes and the base still count; the check's writes to the pool do not
        [(_, x)] = r.check([(20, cmd(DIRTY, 5), "")])
        assert x.result["word1"] == 5 and x.result["count"] == 1
        [(_, x)] = r.check([(21, cmd(OK), "f")])
        assert x.status == "ok" and x.result == {"cmd": 0, "sum": 7, "followup": "f"}


@pytest.mark.parametrize("reuse", MODES)
def test_more_pages_written_than_kept_all_come_back(misbehave, tmp_path, reuse):
    """SMEAR sums, then overwrites, the whole pool, a 3 MiB global array and 1 MiB of stack:
    more pages than the reused process copies back and keeps (512), so it drops the rest, and
    stack below the top it keeps; and it reseeds the C library's rand() and counts in a
    thread-local variable (the initial thread's TLS block: a few pages the reused process
    compares instead of scanning). Every SMEAR state still finds the base, zeros, rand()'s first
    number, a zero count and (reused: on its own fresh stack) a zero stack; the check after them
    finds the base."""
    base = tmp_path / "base"
    base.write_bytes(struct.pack("<4Q", 0, 1, 2, 3))
    with start(misbehave, reuse) as r:
        r.load_base(base)
        res = r.check([(i, cmd(SMEAR), "") for i in range(6)])
        first = res[0][1]
        assert first.status == "ok", first
        assert first.result["pool"] == 1 * 1 + 2 * 2 + 3 * 3 and first.result["global"] == 0, first.result
        assert first.result["tls"] == 0, first.result
        if reuse != "fork":   # a forked check's stack is the runner's, with whatever it left there
            assert first.result["stack"] == 0, first.result
            assert all(x is first for _, x in res), [x.result for _, x in res if x is not first]
        assert all({**x.result, "stack": 0} == {**first.result, "stack": 0} for _, x in res)
        [(_, x)] = r.check([(6, cmd(OK), "")])
        assert x.status == "ok" and x.result["sum"] == 6, x


@pytest.mark.parametrize("reuse", MODES)
def test_a_timer_left_armed_does_not_kill_a_later_check(misbehave, tmp_path, reuse):
    """DIRTY arms alarm(1); the next check runs 1.5 s and must still end "ok"."""
    with start(misbehave, reuse) as r:
        r.load_base(os.devnull)
        res = r.check([(0, cmd(DIRTY), ""), (1, cmd(NAP), "")])
        assert [x.status for _, x in res] == ["ok", "ok"], [(x.status, x.signal) for _, x in res]


@pytest.mark.parametrize("reuse", MODES)
def test_crashes_and_leftovers_between_clean_checks(misbehave, reuse):
    """A crash ends the process that checked it; a lingering child is stray and killed; the
    clean checks around them answer alike."""
    with start(misbehave, reuse) as r:
        r.load_base(os.devnull)
        kinds = [OK, SEGV, OK, LINGER, OK, DIRTY, SEGV, OK]
        res = r.check([(i, cmd(k, 3), "") for i, k in enumerate(kinds)])
        got = [(x.status, x.signal, x.stray) for _, x in res]
        assert got == [("ok", None, False), ("signal", 11, False), ("ok", None, False),
                       ("ok", None, True), ("ok", None, False), ("ok", None, False),
                       ("signal", 11, False), ("ok", None, False)], got
        oks = [x for (_, x), k in zip(res, kinds) if k == OK]
        assert all(x.result == {"cmd": 0, "sum": 3, "followup": ""} for x in oks)


@pytest.mark.parametrize("reuse", MODES)
def test_a_mapping_left_behind_reaches_no_later_check(misbehave, reuse):
    """LEAKMAP counts the mappings it finds, then leaves one more behind. The reused process
    looks for that (the address space's size) when it settles, every 32 states, not after every
    check: the states after the leak and before that settle are checked again, so every LEAKMAP,
    in the first 32 states or after them, finds as many mappings as the first."""
    kinds = [OK] * 3 + [LEAKMAP, OK, LEAKMAP, LEAKMAP] + [OK] * 30 + [LEAKMAP, OK]
    with start(misbehave, reuse) as r:
        r.load_base(os.devnull)
        res = r.check([(i, cmd(k, 3), "") for i, k in enumerate(kinds)])
    assert [x.status for _, x in res] == ["ok"] * len(kinds), [(x.status, x.signal) for _, x in res]
    maps = [x.result for (_, x), k in zip(res, kinds) if k == LEAKMAP]
    assert len(maps) == 4 and all(m == maps[0] for m in maps) and maps[0]["left"], maps
    assert all(x.result == {"cmd": 0, "sum": 3, "followup": ""} for (_, x), k in zip(res, kinds) if k == OK)


def test_reuse_and_fork_give_the_same_answers(misbehave, tmp_path):
    """The same mixed batch through both: identical statuses and results (but for the number of
    the fd DIRTY opens: a forked check inherits the runner's fds, the reused process has closed
    them, so the lowest free number differs)."""
    kinds = [OK, DIRTY, OK, SEGV, DIRTY, DIRTY, OK, LINGER, OK]
    out = []
    for mode in MODES:
        with start(misbehave, mode) as r:
            r.load_base(os.devnull)
            res = r.check([(i, cmd(k, i), str(i)) for i, k in enumerate(kinds)])
            out.append([(x.status, x.signal, x.exit, {k: v for k, v in x.result.items() if k != "fd"}
                         if x.result else None, x.stray) for _, x in res])
    assert out[0] == out[1] == out[2]
