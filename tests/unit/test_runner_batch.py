"""The checker runner hands the reused check process a batch of states per wake-up
(crashsim/runner/worker.h and worker_*.c, docs/runner-protocol.md "The reused check process").

The STATE requests already buffered go to the worker together; it checks them one after another,
each state's result and stderr following the previous one's in the capture files, and a state
that crashes, hangs, runs out of memory or leaves a process behind ends the worker in the middle
of a batch: the states before it keep their answers, the ones after it go to a new worker. Every
state must still get exactly the answer a fork of its own gives (CRASHCHECK_RUNNER_REUSE=0), with
its own stderr, its own result and its own timeout.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.runner_client import REQ, REQ_STATE, Runner
from runner_fixtures import build_fixture


POOL = 0x600000000000
SIZE = 1 << 20
(OK, SEGV, ABORT, SPIN, HOG, EXIT3, BADJSON, NOISY, RC5, PRETTY, RECURSE, SLEEP, XMALLOC, SCRIBBLE,
 BYTES, BIG, FORK, ECHO, STOP, LINGER, EXIT0, KILLPARENT, DIRTY, NAP) = range(24)
MODES = ["scan", "pagemap", "fork"]


@pytest.fixture(scope="module")
def misbehave(tmp_path_factory) -> Path:
    return build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))


def start(prog: Path, mode: str, timeout_ms: int = 1000) -> Runner:
    env = {k: v for k, v in os.environ.items() if k not in ("CRASHCHECK_TRACE", "CRASHCHECK_POOL_ADDR")}
    env["CRASHCHECK_RUNNER_REUSE"] = "0" if mode == "fork" else "1"
    env["CRASHCHECK_RUNNER_PAGEMAP_SCAN"] = "0" if mode == "pagemap" else "1"
    r = Runner([str(prog), "serve", str(SIZE), str(timeout_ms), "128", "5"], pool_base=POOL,
               pool_size=SIZE, env=env)
    assert r.hello["reuse"] is (mode != "fork")
    r.load_base(os.devnull)
    return r


def cmd(c: int, *words: int) -> bytes:
    return encode_writes([(0, struct.pack(f"<{1 + len(words)}Q", c, *words))])


def answer(res) -> tuple:
    """Everything a state's answer says, but a lingering grandchild's pid (it differs per run)."""
    stderr = "pid" if "grandchild" in res.stderr else res.stderr
    return (res.status, res.signal, res.exit, res.result, res.output, stderr, res.stray)


def test_every_kind_of_end_inside_one_batch(misbehave):
    """One batch of clean states around crashes, an exit, a hang, a stop, memory exhaustion, a
    lingering grandchild, invalid and noisy output: each state's answer (its own stderr and result
    too) is the one a fork per state gives, whatever ended the states before it."""
    kinds = [NOISY, OK, SEGV, OK, BYTES, HOG, OK, EXIT3, OK, RC5, STOP, OK, LINGER, OK, BADJSON,
             NOISY, SPIN, OK, PRETTY, XMALLOC, EXIT0, ABORT, OK, RECURSE, OK]
    states = [(i, cmd(k, i, 100 + i), f"f{i}") for i, k in enumerate(kinds)]
    got = {}
    for mode in MODES:
        with start(misbehave, mode) as r:
            got[mode] = [answer(res) for _, res in r.check(states)]
    assert got["scan"] == got["fork"]
    assert got["pagemap"] == got["fork"]
    statuses = [a[0] for a in got["fork"]]
    assert statuses == ["ok", "ok", "signal", "ok", "ok", "oom", "ok", "exit", "ok", "exit", "timeout", "ok",
                        "ok", "ok", "ok", "ok", "timeout", "ok", "ok", "oom", "ok", "signal", "ok", "signal",
                        "ok"], statuses
    # the clean states after noisy ones have an empty stderr of their own
    for i, k in enumerate(kinds):
        if k == OK:
            assert got["scan"][i][3] == {"cmd": 0, "sum": 100 + 2 * i, "followup": f"f{i}"}
            assert got["scan"][i][5] == "", (i, got["scan"][i])
    assert got["scan"][0][5].endswith("stdout line 99\n") and got["scan"][15][5] == got["scan"][0][5]


def test_each_state_of_a_batch_has_its_own_timeout(misbehave):
    """Two checks of 1.5 s each in one batch, with a 2 s timeout: each has its own 2 s (a deadline
    for the batch would kill the second); a hang after them is still a timeout."""
    with start(misbehave, "scan", timeout_ms=2000) as r:
        res = r.check([(0, cmd(NAP), ""), (1, cmd(NAP), ""), (2, cmd(OK, 4), ""), (3, cmd(SLEEP), ""),
                       (4, cmd(OK, 5), "")])
        assert [x.status for _, x in res] == ["ok", "ok", "ok", "timeout", "ok"], [x for _, x in res]
        assert res[2][1].result["sum"] == 4 and res[4][1].result["sum"] == 5


def test_big_results_inside_a_batch(misbehave):
    """Results of several MB between small ones (the worker stops a batch once its results fill
    half the shared head of the result file; the rest goes in a second hand-over): every result
    is whole and its own."""
    kinds = [OK, BIG, OK, BIG, BIG, OK, NOISY, BIG, OK]
    with start(misbehave, "scan") as r:
        res = r.check([(i, cmd(k, i), "") for i, k in enumerate(kinds)])
    for i, (k, (_, x)) in enumerate(zip(kinds, res)):
        assert x.status == "ok", (i, x.status)
        if k == BIG:
            assert len(x.result["items"]) == 200000 and x.result["items"][-1][0] == 199999
        elif k == OK:
            assert x.result == {"cmd": 0, "sum": i, "followup": ""} and x.stderr == ""
    assert res[1][1] is res[3][1]   # identical answers are still deduplicated


def test_crashes_at_the_edges_of_full_batches(misbehave):
    """More states than one hand-over takes (128), crashes right at its edges: every state in
    order, with its own result."""
    crash = {0, 126, 127, 128, 129, 255, 256, 299}
    states = [(i, cmd(SEGV if i in crash else OK, i), "") for i in range(300)]
    with start(misbehave, "scan") as r:
        res = r.check(states)
    assert [sid for sid, _ in res] == list(range(300))
    for i, x in res:
        if i in crash:
            assert x.status == "signal" and x.signal == 11, (i, x)
        else:
            assert x.status == "ok" and x.result["sum"] == i, (i, x)


@pytest.mark.parametrize("mode", ["scan", "fork"])
def test_an_invalid_state_inside_a_batch_is_answered_in_its_place(misbehave, mode):
    """A state whose writes fall outside the pool ends the batch before it: it is answered with an
    error in its place, and the states after it are checked."""
    with start(misbehave, mode) as r:
        bad = encode_writes([(SIZE - 4, b"12345678")])
        bodies = [cmd(OK, 1), cmd(OK, 2), bad, cmd(OK, 3), cmd(SEGV), cmd(OK, 4)]
        payload = b"".join(REQ.pack(REQ_STATE, 4 + len(b), 100 + i) + struct.pack("<I", 0) + b
                           for i, b in enumerate(bodies))
        answers = r._read_lines(len(bodies), payload)
        assert [a.get("state", a.get("id")) for a in answers] == [100, 101, 102, 103, 104, 105]
        assert "outside the pool" in answers[2]["error"]
        assert [answers[i]["result"]["sum"] for i in (0, 1, 3)] == [1, 2, 3]
        assert answers[4]["status"] == "signal" and answers[5]["result"]["sum"] == 4


def dirty_free(res) -> tuple:
    """answer() without the number of the fd DIRTY leaves open (a forked check inherits the
    runner's fds, the reused process's checks do not)."""
    a = answer(res)
    result = {k: v for k, v in a[3].items() if k != "fd"} if a[3] else a[3]
    return a[:3] + (result,) + a[4:]


@pytest.mark.parametrize("mode", ["scan", "pagemap"])
def test_a_change_to_the_process_is_found_and_the_states_after_it_checked_again(misbehave, mode):
    """The worker settles its process (signal mask, handlers, timers put back; limits, umask and
    directory compared) every 32 states and at a batch's end, not after every state. DIRTY changes
    all of them; a DIRTY, a crash and a 1.5 s check that DIRTY's alarm(1) would kill, in the same
    stretch as the first DIRTY, must still be answered as a fork per state answers them: the
    states after the change are checked again."""
    kinds = [OK] * 35 + [DIRTY, OK, NAP, SEGV, DIRTY] + [OK] * 30 + [DIRTY]
    states = [(i, cmd(k, i), "") for i, k in enumerate(kinds)]
    got = {}
    for m in (mode, "fork"):
        with start(misbehave, m, timeout_ms=5000) as r:
            got[m] = [dirty_free(res) for _, res in r.check(states)]
    assert got[mode] == got["fork"]
    # every DIRTY finds the process as the first one did (its own word1 aside)
    dirty = [{k: v for k, v in got[mode][i][3].items() if k != "word1"} for i, k in enumerate(kinds) if k == DIRTY]
    assert all(d == dirty[0] for d in dirty) and dirty[0]["count"] == 1, dirty
    assert got[mode][37][0] == "ok" and got[mode][38][:2] == ("signal", 11)
