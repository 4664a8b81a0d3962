"""A crash point's follow-up crosses to the runner once (REQ_FOLLOWUP, docs/runner-protocol.md) and
a tree driver parses it once (trees/common/followup_memo.c): the answers stay those of a follow-up
sent and parsed with every state."""
from __future__ import annotations

import json
import os
import struct
import subprocess
from pathlib import Path

import pytest

from crashcheck.crashsim.image import encode_writes
from crashcheck.crashsim.runner_client import REQ_FOLLOWUP, Runner
from runner_fixtures import build_fixture

POOL = 0x600000000000
SIZE = 1 << 20
OK, KILLPARENT = 0, 21
ROOT = Path(__file__).resolve().parents[2]


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("CRASHCHECK_TRACE", "CRASHCHECK_POOL_ADDR")}


def cmd(c: int, *words: int) -> bytes:
    return encode_writes([(0, struct.pack(f"<{1 + len(words)}Q", c, *words))])


@pytest.fixture(scope="module")
def misbehave(tmp_path_factory) -> Path:
    return build_fixture.build("misbehave", tmp_path_factory.mktemp("fixtures"))


def test_states_name_the_stored_followup_and_a_restarted_runner_gets_it_again(misbehave, tmp_path):
    zero = tmp_path / "zero"
    zero.write_bytes(b"")
    with Runner([str(misbehave), "serve", str(SIZE), "1000", "128", "5"], pool_base=POOL, pool_size=SIZE,
                env=clean_env(), restart=True) as r:
        assert r.hello["followup_stored"]
        r.load_base(zero)
        sent = []
        real_push = r._push
        r._push = lambda kind, body, ident=None: (sent.append((kind, body)), real_push(kind, body, ident))[1]
        fu_a, fu_b = "after a", "after b"     # the fixture echoes its followup into its JSON
        states = [(0, cmd(OK, 1), fu_a), (1, cmd(OK, 2), fu_a), (2, cmd(OK, 3), fu_b),
                  (3, cmd(KILLPARENT), fu_b), (4, cmd(OK, 5), fu_b), (5, cmd(OK, 6), ""), (6, cmd(OK, 7), fu_a)]
        answers = dict(r.check(states))
        # one FOLLOWUP request per change of text (an empty one goes inline), none per state
        assert [body.decode() for kind, body in sent if kind == REQ_FOLLOWUP] == [fu_a, fu_b, fu_a]
        assert answers[3].status == "runner-died" and r.stats.restarts >= 1
        # every state ran its own text, the states after the restart too
        for sid, _, fu in states:
            if sid != 3:
                assert answers[sid].result == {"cmd": 0, "sum": sid + 1, "followup": fu}, sid


def _wort() -> Path:
    folder = ROOT / "build" / "trees" / "wort"
    if not (folder / "driver-native").exists():
        pytest.skip("build/trees/wort not built (make trees)")
    return folder


def test_a_driver_runs_each_states_own_followup_text(tmp_path):
    """The driver's parse memo: texts alternating, one of the same length as another, one that
    does not parse between them; each state's answer is `driver check`'s for its text."""
    folder = _wort()
    hist = tmp_path / "history"
    hist.write_text("insert 1 10\ninsert 2 20\n")
    pool = tmp_path / "pool"
    env = clean_env()
    subprocess.run([str(folder / "driver-native"), "run", "--pool", str(pool), "--create", str(hist)],
                   check=True, env=env, capture_output=True)
    texts = ["lookup 1\n", "lookup 2\n", "lookup 1\n", "lookup x\n", "insert 3 30\nlookup 3\nscan 0 9\n",
             "lookup 1\n", "", "lookup 2\n"]

    def check(text: str) -> dict | None:
        """`driver check`'s answer, None for a text it refuses (exit 2)."""
        (tmp_path / "fu").write_text(text)
        out = subprocess.run([str(folder / "driver-native"), "check", "--pool", str(pool), "--followup",
                              str(tmp_path / "fu")], env=env, capture_output=True, text=True)
        return json.loads(out.stdout) if out.returncode == 0 else None
    size = pool.stat().st_size
    with Runner([str(folder / "driver-native"), "serve", "--size", str(size)], pool_base=POOL,
                pool_size=size, env=env) as r:
        r.load_base(pool)
        got = dict(r.check([(i, b"", t) for i, t in enumerate(texts)]))
    for i, t in enumerate(texts):
        want = check(t)
        if want is None:    # serve answers a followup that does not parse with an error, no follow-up
            assert "followup: line 1" in got[i].result["error"] and got[i].result["followup"] == [], t
        else:
            assert got[i].result == want, t
    assert got[0].result["followup"] == ["value 10"] and got[1].result["followup"] == ["value 20"]
    assert "error" in got[3].result and got[5].result["followup"] == ["value 10"]
