"""The runner's LIMIT request: a few checks may run out of the full time limit, the rest get a
shorter one (docs/runner-protocol.md "Limits"; harness/check/hangs.py uses it per crash point).

Uses the checker-runner fixture tests/runner_fixtures/misbehave.c, whose check spins forever,
stops itself or succeeds as the state's first pool word says. Nothing here measures time: which
limit a check had is what its answer says (`limit_ms`)."""
import os
import struct

import pytest

from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.runner_client import Runner, RunnerError
from runner_fixtures import build_fixture

POOL = 0x600000000000
SIZE = 1 << 20
OK, SPIN, STOP = 0, 3, 18


@pytest.fixture(scope="module")
def misbehave(tmp_path_factory):
    return build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))


def start(prog, reuse: bool, restart: bool = False) -> Runner:
    env = dict(os.environ, CRASHCHECK_RUNNER_REUSE="1" if reuse else "0")
    env.pop("CRASHCHECK_TRACE", None)
    env.pop("CRASHCHECK_POOL_ADDR", None)
    return Runner([str(prog), "serve", str(SIZE), "1000", "128", "5"], pool_base=POOL, pool_size=SIZE,
                  env=env, restart=restart)


def cmd(c: int, word: int = 0) -> bytes:
    return encode_writes([(0, struct.pack("<2Q", c, word))])


def batch(r: Runner, states: list[bytes]) -> list:
    """Check STATES as one batch (all sent before any answer comes back)."""
    first = r.next_state
    return [res for _, res in r.check([(first + i, w, "") for i, w in enumerate(states)])]


@pytest.mark.parametrize("reuse", [True, False], ids=["reused", "forked"])
def test_after_two_checks_out_of_time_the_rest_get_the_shorter_limit(misbehave, tmp_path, reuse):
    zero = tmp_path / "zero"
    zero.write_bytes(b"")
    with start(misbehave, reuse) as r:
        r.load_base(zero)
        r.queue_limit(400, 2, 40)
        # stops cost no time and do not count; a check that finishes is answered as ever
        got = batch(r, [cmd(STOP), cmd(SPIN, 1), cmd(OK, 5), cmd(SPIN, 2), cmd(SPIN, 3), cmd(OK, 6),
                        cmd(SPIN, 4), cmd(STOP)])
        assert [g.status for g in got] == ["timeout", "timeout", "ok", "timeout", "timeout", "ok", "timeout",
                                           "timeout"]
        assert [g.limit_ms for g in got] == [None, None, None, None, 40, None, 40, None]
        assert got[2].result["sum"] == 5 and got[5].result["sum"] == 6
        # the next LIMIT counts anew
        r.queue_limit(400, 1, 40)
        assert [g.limit_ms for g in batch(r, [cmd(SPIN, 5), cmd(SPIN, 6)])] == [None, 40]
        # a base puts back the runner's own limit: no shorter one, whatever ran out of time
        r.load_base(zero)
        assert [g.limit_ms for g in batch(r, [cmd(SPIN, 7), cmd(SPIN, 8)])] == [None, None]
        # after 0: every check gets the full limit
        r.queue_limit(300, 0, 40)
        assert [g.limit_ms for g in batch(r, [cmd(SPIN, 9), cmd(SPIN, 10), cmd(SPIN, 11)])] == [None] * 3


def test_a_limit_with_a_bad_body_is_an_error(misbehave):
    with start(misbehave, True) as r:
        r._push(7, b"\0" * 8)
        with pytest.raises(RunnerError, match="limit .*body of 8 bytes, not 12"):
            r.flush()
