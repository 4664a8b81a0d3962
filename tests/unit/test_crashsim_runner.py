"""The checker runner (crashsim/runner/) and its Python client (crashsim/runner_client.py).

The fixture tests/runner_fixtures/misbehave.c picks its CHECK's behaviour from the first word of
the pool, so each test sends states whose writes set that word: the runner must report every
misbehaviour correctly and keep serving afterwards.
"""
from __future__ import annotations

import os
import signal
import struct
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import json

from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.runner_client import Runner, RunnerError
from runner_fixtures import build_fixture


POOL = 0x600000000000
SIZE = 1 << 20
(OK, SEGV, ABORT, SPIN, HOG, EXIT3, BADJSON, NOISY, RC5, PRETTY, RECURSE, SLEEP, XMALLOC, SCRIBBLE,
 BYTES, BIG, FORK, ECHO, STOP, LINGER, EXIT0, KILLPARENT) = range(22)


@pytest.fixture(scope="module")
def misbehave(tmp_path_factory) -> Path:
    return build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))


def clean_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("CRASHCHECK_TRACE", None)
    env.pop("CRASHCHECK_POOL_ADDR", None)
    return env


def start(prog: Path, timeout_ms: int = 1000, mem_mb: int = 128, cpu_s: int = 5, size: int = SIZE,
          restart: bool = False) -> Runner:
    return Runner([str(prog), "serve", str(size), str(timeout_ms), str(mem_mb), str(cpu_s)],
                  pool_base=POOL, pool_size=size, env=clean_env(), restart=restart)


def cmd(c: int, *words: int) -> bytes:
    """Writes setting the command word and words 1.. of the pool."""
    return encode_writes([(0, struct.pack(f"<{1 + len(words)}Q", c, *words))])


@pytest.fixture(scope="module")
def shared_runner(misbehave, tmp_path_factory):
    r = start(misbehave)
    r.zero = tmp_path_factory.mktemp("base") / "zero"
    r.zero.write_bytes(b"")
    yield r
    assert r.close() == 0


@pytest.fixture
def runner(shared_runner):
    """The module's runner with an all-zero base (tests must not see each other's bases)."""
    shared_runner.load_base(shared_runner.zero)
    return shared_runner


def one(r: Runner, writes: bytes, followup: str = ""):
    sid = r.next_state
    [(got, res)] = r.check([(sid, writes, followup)])
    assert got == sid
    return res


def test_hello_reports_pool_and_limits(runner):
    assert runner.pool_base == POOL and runner.pool_size == SIZE
    assert runner.hello["limits"] == {"timeout_ms": 1000, "mem_bytes": 128 << 20, "cpu_seconds": 5}


def test_ok_state_sees_base_patch_and_state_writes(runner, tmp_path):
    image = bytearray(SIZE)
    struct.pack_into("<3Q", image, 8, 100, 20, 3)            # words 1..3 in the base file
    (tmp_path / "base").write_bytes(bytes(image))
    runner.load_base(tmp_path / "base")
    runner.patch(encode_writes([(32, struct.pack("<Q", 4000))]))   # word 4 by patch
    res = one(runner, cmd(OK) + encode_writes([(40, struct.pack("<Q", 50000))]), "after")
    assert res.status == "ok" and res.exit == 0 and res.signal is None
    assert res.result == {"cmd": 0, "sum": 54123, "followup": "after"}
    # the state's writes did not stick: the next state sees only base + patch
    assert one(runner, cmd(OK), "after").result["sum"] == 4123
    assert one(runner, b"", "after").result["sum"] == 4123


@pytest.mark.parametrize("what,status,sig,code,stderr", [
    (SEGV, "signal", signal.SIGSEGV, None, "about to crash"),
    (ABORT, "signal", signal.SIGABRT, None, "about to abort"),
    (EXIT3, "exit", None, 3, ""),
    (RECURSE, "signal", signal.SIGSEGV, None, ""),
    (HOG, "oom", signal.SIGSEGV, None, ""),
    (XMALLOC, "oom", signal.SIGABRT, None, "out of memory"),
    (SLEEP, "timeout", signal.SIGKILL, None, ""),
    (SPIN, "timeout", signal.SIGKILL, None, ""),
])
def test_misbehaving_checks_are_results(runner, what, status, sig, code, stderr):
    res = one(runner, cmd(what))
    assert (res.status, res.signal, res.exit) == (status, sig, code)
    assert res.result is None
    assert stderr in res.stderr
    # and the runner still serves
    after = one(runner, cmd(OK, 7))
    assert after.status == "ok" and after.result["sum"] == 7


def test_timeout_kills_what_the_check_forked(runner):
    res = one(runner, cmd(FORK))
    assert res.status == "timeout"
    grandchild = int(res.stderr.split("grandchild ")[1].split()[0])

    def gone() -> bool:
        try:
            with open(f"/proc/{grandchild}/stat") as f:
                return f.read().split(") ")[1][0] in "ZX"      # dead, waiting to be reaped
        except FileNotFoundError:
            return True

    deadline = time.monotonic() + 5
    while not gone() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone()


def test_cpu_limit_is_a_timeout(misbehave):
    # The wall limit is far above the CPU limit: on a loaded machine the spin gets a small share of
    # a core, and a wall timeout first would make this test about load, not about RLIMIT_CPU.
    with start(misbehave, timeout_ms=60000, cpu_s=1) as r:
        res = one(r, cmd(SPIN))
        assert res.status == "timeout" and res.signal == signal.SIGXCPU


def test_nonzero_return_with_result(runner):
    res = one(runner, cmd(RC5))
    assert (res.status, res.exit, res.result) == ("exit", 5, {"cmd": 8})


def test_invalid_json_is_kept_as_output(runner):
    res = one(runner, cmd(BADJSON))
    assert res.status == "ok" and res.result is None and not res.ok
    assert res.output.strip() == '{"cmd": 6, oops}'


def test_pretty_json_is_compacted(runner):
    res = one(runner, cmd(PRETTY))
    assert res.result == {"cmd": 9, "list": [1, 2, 3], "s": "a b"}


def test_stray_output_is_captured_not_mixed_into_the_protocol(runner):
    res = one(runner, cmd(NOISY))
    assert res.result == {"cmd": 7}
    lines = res.stderr.splitlines()
    assert len(lines) == 20                      # the tail only
    assert any(line.startswith("stdout line") for line in lines)


def test_bad_bytes_and_unicode(runner):
    res = one(runner, cmd(BYTES))
    assert res.result == {"cmd": 14, "s": "caf\u00e9 \u00e9"}
    assert "\ufffd" in res.stderr and res.stderr.endswith("end\n")


def test_big_result(runner):
    res = one(runner, cmd(BIG))
    assert res.ok and len(res.result["items"]) == 200000
    assert res.result["items"][1] == [1, "9e3779b1"]


def test_scribbling_check_does_not_change_the_base(runner):
    res = one(runner, cmd(SCRIBBLE))
    assert res.result["sum"] == (15 * 0xFFFFFFFFFFFFFFFF) % (1 << 64)
    base_sum = one(runner, cmd(OK, 0, 0, 0, 0, 9)).result["sum"]
    assert base_sum == 9


def test_identical_answers_are_deduplicated(runner):
    before = runner.stats.dups
    a = runner.next_state
    answers = runner.check([(a, cmd(OK, 1, 2), ""), (a + 1, cmd(OK, 3), ""), (a + 2, cmd(OK, 2, 1), ""),
                            (a + 3, cmd(OK, 5), "x")])
    results = dict(answers)
    assert results[a + 1] is results[a] and results[a + 2] is results[a]
    assert results[a].first == a
    assert results[a + 3].result["followup"] == "x" and results[a + 3].first == a + 3
    assert runner.stats.dups - before == 2


def test_write_outside_the_pool_is_rejected_and_the_runner_goes_on(runner):
    with pytest.raises(RunnerError, match="outside the pool"):
        runner.check([(runner.next_state, encode_writes([(SIZE - 4, b"12345678")]), "")])
    assert one(runner, cmd(OK, 1)).ok


def test_base_file_larger_than_the_pool(runner, tmp_path):
    (tmp_path / "big").write_bytes(bytes(SIZE + 8))
    with pytest.raises(RunnerError, match="has 1048584 bytes"):
        runner.load_base(tmp_path / "big")


def test_sparse_base_keeps_data_at_the_end(runner, tmp_path):
    path = tmp_path / "sparse"
    with open(path, "wb") as f:
        f.truncate(SIZE)
        f.seek(8)
        f.write(struct.pack("<Q", 11))
        f.seek(SIZE - 8)
        f.write(b"\x01" * 8)
    runner.load_base(path)
    assert one(runner, cmd(OK)).result["sum"] == 11
    # a second base replaces the first entirely (the pool is zeroed before loading)
    (tmp_path / "zero").write_bytes(bytes(16))
    runner.load_base(tmp_path / "zero")
    assert one(runner, cmd(OK)).result["sum"] == 0


def test_pool_address_already_mapped(misbehave):
    with pytest.raises(RunnerError, match="already mapped"):
        Runner([str(misbehave), "premap", str(SIZE)], env=clean_env())


def test_pool_mismatch_is_refused(misbehave):
    with pytest.raises(RunnerError, match="pool has 1048576 bytes, the trace's 4096"):
        Runner([str(misbehave), "serve", str(SIZE)], pool_base=POOL, pool_size=4096, env=clean_env())


def test_state_ids_must_increase(runner):
    one(runner, cmd(OK))
    with pytest.raises(ValueError, match="reused"):
        runner.queue_state(runner.next_state - 1, b"")


def test_runner_death_is_reported(misbehave):
    r = start(misbehave)
    os.kill(r.pid, signal.SIGKILL)
    with pytest.raises(RunnerError, match="runner died"):
        r.check([(0, cmd(OK), "")])


def test_missing_program():
    with pytest.raises(RunnerError, match="cannot start the runner"):
        Runner(["/nonexistent/driver", "serve"])


def test_many_states_in_one_batch(runner):
    # more answer bytes than a pipe holds, sent as one batch: needs the poll-driven exchange
    a = runner.next_state
    states = [(a + i, cmd(OK, i, 1 << 40), "f" * 200) for i in range(600)]
    answers = runner.check(states)
    assert [sid for sid, _ in answers] == [s[0] for s in states]
    assert all(res.result["sum"] == i + (1 << 40) for i, (_, res) in enumerate(answers))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(1 << 70), 1 << 70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12)
echo_settings = settings(max_examples=80, deadline=None,
                         suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@echo_settings
@given(obj=st.dictionaries(st.text(max_size=6), json_values, max_size=5),
       indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_valid_json_objects_come_back_equal(shared_runner, obj, indent, ascii_only):
    text = json.dumps(obj, indent=indent, ensure_ascii=ascii_only) + "\n"
    res = one(shared_runner, cmd(ECHO), text)
    assert res.status == "ok" and res.output is None
    assert res.result == obj


@echo_settings
@given(text=st.one_of(
    st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)), max_size=60),
    st.sampled_from(['{"a":1} x', '{"a":1}{}', '{"a":01}', '{"a":1,}', '{"a":"\t"}', '{"a":tru}',
                     '[1, 2]', '"just a string"', '{"a":1e}', '{"a":-}', '{"a":"\\x"}', '{', '{"a" 1}',
                     '{"a":[1,]}', '{"\\ud800":1}'])))
def test_output_that_is_not_one_json_object(shared_runner, text):
    def strict(name):                      # Python accepts NaN and Infinity; JSON does not
        raise ValueError(name)
    try:
        ok = isinstance(json.loads(text, parse_constant=strict), dict)
    except ValueError:
        ok = False
    res = one(shared_runner, cmd(ECHO), text)
    if ok:
        assert res.result == json.loads(text)
    else:
        assert res.result is None and res.output == text[:4096]


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] in "ZX"      # dead, waiting to be reaped
    except FileNotFoundError:
        return True


def test_stopped_check_is_hung_at_once(misbehave):
    with start(misbehave, timeout_ms=0) as r:          # no timeout: a stop must still end it
        t0 = time.monotonic()
        res = one(r, cmd(STOP))
        assert (res.status, res.signal, res.result) == ("timeout", signal.SIGSTOP, None)
        assert time.monotonic() - t0 < 5
        assert one(r, cmd(OK, 3)).result["sum"] == 3


def test_lingering_grandchild_is_killed_and_reported(runner):
    res = one(runner, cmd(LINGER))
    assert res.status == "ok" and res.result == {"cmd": 19} and res.stray
    grandchild = int(res.stderr.split("grandchild ")[1].split()[0])
    deadline = time.monotonic() + 5
    while not gone(grandchild) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(grandchild)
    assert not one(runner, cmd(OK, 1)).stray


def test_exit_zero_without_result(runner):
    res = one(runner, cmd(EXIT0))
    assert (res.status, res.exit, res.result, res.output) == ("ok", 0, None, "")


def test_check_that_kills_the_runner_without_restart_is_an_error(misbehave):
    r = start(misbehave)
    with pytest.raises(RunnerError, match="runner died"):
        r.check([(0, cmd(KILLPARENT), "")])


def test_check_that_kills_the_runner_is_answered_and_a_new_runner_goes_on(misbehave, tmp_path):
    image = bytearray(SIZE)
    struct.pack_into("<2Q", image, 8, 100, 20)             # words 1..2 in the base file
    (tmp_path / "base").write_bytes(bytes(image))
    with start(misbehave, restart=True) as r:
        first = r.pid
        r.queue_base(tmp_path / "base")
        r.queue_patch(encode_writes([(24, struct.pack("<Q", 3000))]))   # word 3 by patch
        answers = r.check([(0, cmd(OK), ""), (1, cmd(KILLPARENT), ""), (2, cmd(OK), ""),
                           (3, cmd(KILLPARENT), ""), (4, cmd(OK, 1), "")])
        assert [sid for sid, _ in answers] == [0, 1, 2, 3, 4]
        assert [res.status for _, res in answers] == ["ok", "runner-died", "ok", "runner-died", "ok"]
        # the new runners were brought to the same base: base file + patch (state 4 sets word 1)
        assert [answers[i][1].result["sum"] for i in (0, 2, 4)] == [3120, 3120, 3021]
        assert r.pid != first and r.stats.restarts == 4      # two per killer: batch, then one by one
        assert one(r, cmd(OK)).result["sum"] == 3120
