"""Functional tests of the range lock (trees/rangelock) and of the driver's generic-model path.

- The native test program trees/rangelock/test/rl_test.c, built here: single-threaded semantics
  against a brute-force list of held ranges (universe with 0, 2^64-1 and their neighbours, wrong
  releases included), and a multi-threaded stress (2-4 threads, bounded time) that checks mutual
  exclusion on a shared owner array while each range is held and that every holder's release
  succeeds.
- Every seeded bug of trees/rangelock/bugs.json: shown single-threaded, by the stress (built with
  -DRL_NOISE_INJECTION, which yields in the racy windows), or marked as needing the deterministic
  scheduler.
- The driver end to end (build/trees/rangelock/driver-native, no pool): result lines equal
  crashcheck.specs.range_lock.MODEL's over Hypothesis histories from the model's own strategy hook; `info`,
  `--dump`, `check`, user errors.
- The driver's refusal to cut over-long keys and values (trees/common/test/long_adapter.c).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from crashcheck.specs import model as spec_model
from crashcheck.specs import range_lock
from treeutil import CLANG, ROOT, run_driver, seeded_bugs

TREE = ROOT / "trees" / "rangelock"
DRIVER = ROOT / "build" / "trees" / "rangelock" / "driver-native"
BUGS = seeded_bugs(TREE / "bugs.json")
U64 = (1 << 64) - 1

# How each seeded bug is shown natively: "seq" (single thread, deterministic), "crash" (the single
# thread dies of SIGSEGV), "stress" (the noisy stress finds it within a few short runs), or
# "scheduler" (a window too narrow for native threads to hit reliably: left to the deterministic
# scheduler, with the reason).
SHOWN_BY = {
    "overlap-one-side": "seq",
    "paper-find": "seq",
    "cas-as-store": "stress",
    "succ-before-mark": "stress",
    "release-no-retry": "stress",
    "unlink-before-mark": "stress",
    "mark-bottom-first": "stress",
    "release-unheld-null": "crash",
}


def compile_rl_test(out: Path, *defines: str) -> Path:
    cmd = [CLANG, "-O2", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-pthread",
           *(f"-D{d}" for d in defines), f"-I{TREE}", "-o", str(out),
           str(TREE / "test" / "rl_test.c"), str(TREE / "rangelock.c")]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


@pytest.fixture(scope="module")
def rl_test(tmp_path_factory) -> Path:
    return compile_rl_test(tmp_path_factory.mktemp("rl") / "rl_test")


@pytest.fixture(scope="module")
def rl_noisy(tmp_path_factory) -> Path:
    return compile_rl_test(tmp_path_factory.mktemp("rl") / "rl_test_noisy", "RL_NOISE_INJECTION")


def run_prog(prog: Path, *args, timeout: int = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(prog), *map(str, args)], capture_output=True, text=True, timeout=timeout)


def test_catalog_is_complete():
    assert len(BUGS) >= 5
    assert {b["name"] for b in BUGS} == set(SHOWN_BY)
    for b in BUGS:
        # a bug shown single-threaded ("seq") is a wrong result, whatever the thread count
        # (harness/check/threads.py sequential_wrong_value); the others need an interleaving
        how = SHOWN_BY[b["name"]]
        assert b["class"] == {"seq": "wrong-value", "crash": "operation-crash"}[how] if how in ("seq", "crash") \
            else b["class"] in ("linearizability-violation", "deadlock", "livelock"), b["name"]
        assert f"#ifdef {b['define']}" in (TREE / "rangelock.c").read_text() or \
               f"#ifndef {b['define']}" in (TREE / "rangelock.c").read_text()


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_single_thread_matches_brute_force(rl_test, seed):
    res = run_prog(rl_test, "seq", seed, 5000)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("ok")


@pytest.mark.parametrize("threads", [2, 3, 4])
def test_stress_mutual_exclusion(rl_noisy, threads):
    res = run_prog(rl_noisy, "stress", threads, 1500, threads)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("ok")


@pytest.mark.parametrize("bug", BUGS, ids=[b["name"] for b in BUGS])
def test_seeded_bug_is_shown(tmp_path, bug):
    how = SHOWN_BY[bug["name"]]
    if how.startswith("scheduler"):
        pytest.skip(f"{bug['name']} needs the deterministic scheduler ({how.split(': ', 1)[1]})")
    prog = compile_rl_test(tmp_path / "rl_bug", bug["define"], "RL_NOISE_INJECTION")
    if how == "seq":
        res = run_prog(prog, "seq", 1, 5000)
        assert res.returncode == 1, f"{bug['name']} not shown single-threaded:\n{res.stdout}"
        return
    if how == "crash":
        res = run_prog(prog, "seq", 1, 5000)
        assert res.returncode == -11, f"{bug['name']} did not die of SIGSEGV single-threaded:\n{res.stdout}"
        return
    outs = []
    for seed in range(1, 9):   # a few short noisy runs; stops at the first violation
        res = run_prog(prog, "stress", 4, 1500, seed)
        if res.returncode == 1 and res.stdout.startswith("violation"):
            return
        outs.append(res.stdout.strip())
    pytest.fail(f"stress did not show {bug['name']}: {outs}")


# ---- the driver --------------------------------------------------------------------------------

def drive(history: list[str], *extra: str, driver: Path = DRIVER) -> subprocess.CompletedProcess:
    return run_driver(driver, ["run", *extra], "\n".join(history) + "\n")


def test_info_names_the_model(trees_built):
    info = json.loads(run_driver(DRIVER, ["info"]).stdout)
    assert info["name"] == "rangelock"
    assert info["model"] == "range_lock"
    assert info["pm"] is False
    assert info["ops"] == [{"name": "trylock", "args": "uu"}, {"name": "release", "args": "uu"}]


def test_map_trees_name_ordered_map(trees_built):
    info = json.loads(run_driver(ROOT / "build" / "trees" / "wort" / "driver-native", ["info"]).stdout)
    assert info["model"] == "ordered_map" and "ops" not in info


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=range_lock.MODEL.histories(min_ops=1, max_ops=20))
def test_driver_matches_model(trees_built, ops):
    state, want = spec_model.run(range_lock.MODEL, ops)
    res = drive([range_lock.MODEL.op_text(op) for op in ops], "--dump", "--check")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [range_lock.MODEL.parse_output(x) for x in lines[:-1]] == want
    assert lines[-1].startswith("dump ")
    assert range_lock.MODEL.dump_state(json.loads(lines[-1][5:])) == state


def test_driver_edges_and_wrong_releases(trees_built):
    hist = ["trylock 0 0", f"trylock {U64} {U64}", f"trylock 0 {U64}", "release 0 1", "release 0 0",
            f"trylock 0 {U64 - 1}", f"release {U64} {U64}", f"release {U64} {U64}", f"trylock 0 {U64}"]
    res = drive(hist, "--dump")
    assert res.stdout.splitlines() == ["ok", "ok", "fail", "fail", "ok", "ok", "ok", "fail", "fail",
                                       f'dump [["0", "{U64 - 1}"]]']


def test_driver_check_json(trees_built, tmp_path):
    follow = tmp_path / "f"
    follow.write_text("trylock 1 2\ntrylock 2 3\nrelease 1 2\n")
    res = run_driver(DRIVER, ["check", "--followup", str(follow)])
    out = json.loads(res.stdout)
    assert out["recovered"] and out["dump"] == [] and out["violations"] == []
    assert out["followup"] == ["ok", "fail", "ok"]


@pytest.mark.parametrize("stdin,needle", [
    ("trylock 1 2\ntrylok 3 4\n", "line 2: unknown operation 'trylok' (trylock, release)"),
    ("release 1\n", "line 1: release takes 2 arguments, got 1"),
    ("trylock 1 x:01\n", "line 1: trylock: bad argument 2"),
    (f"trylock 0 {U64 + 1}\n", "line 1"),
])
def test_driver_user_errors(trees_built, stdin, needle):
    res = run_driver(DRIVER, ["run"], stdin)
    assert res.returncode == 2
    assert needle in res.stderr


def test_start_above_end_is_an_error(trees_built):
    res = drive(["trylock 3 2", "trylock 2 3"])
    assert res.stdout.splitlines() == ["error", "ok"]
    assert "start is above the end" in res.stderr


@pytest.mark.parametrize("name,history,want", [
    ("overlap-one-side", ["trylock 1 5", "trylock 3 4"], ["ok", "ok"]),
    ("paper-find", ["trylock 1 2", "release 1 2", "trylock 1 2"], ["ok", "ok", "fail"]),
])
def test_sequential_bug_drivers_diverge_from_model(trees_built, name, history, want):
    """The catalog's driver-bug-<name> binaries (built by make) show the sequential bugs
    through the driver, where the model says otherwise."""
    ops = [range_lock.parse_op(x) for x in history]
    assert spec_model.run(range_lock.MODEL, ops)[1] != want
    res = drive(history, driver=DRIVER.parent / f"driver-bug-{name}")
    assert res.stdout.splitlines() == want


# ---- over-long keys and values are reported, never cut -----------------------------------------

@pytest.fixture(scope="module")
def longkv(trees_built, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("longkv") / "driver"
    common = sorted(str(p) for p in (ROOT / "trees" / "common").glob("*.c"))
    cmd = [CLANG, "-O2", "-g", "-std=gnu11", "-Wall", "-Wextra", "-Werror",
           f"-I{ROOT / 'trees' / 'common'}", f"-I{ROOT / 'instrument' / 'include'}",
           f"-I{ROOT / 'crashsim' / 'runner'}", "-o", str(out),
           str(ROOT / "trees" / "common" / "test" / "long_adapter.c"), *common,
           str(ROOT / "build" / "libcrashcheck_rt.a"), "-lpthread", "-ldl"]
    res = subprocess.run(cmd, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def test_overlong_dump_and_lookup_are_violations(longkv, tmp_path):
    pool = tmp_path / "pool"
    assert run_driver(longkv, ["run", "--pool", str(pool), "--create", "--size", "4m"], "").returncode == 0
    out = json.loads(run_driver(longkv, ["check", "--pool", str(pool)]).stdout)
    key30 = "x:" + "11" * 30
    assert f"key {key30}: dumped key is 30 bytes, longer than the 24 the driver takes" in out["violations"]
    assert any("its dumped value is 20 bytes, longer than the 16" in v for v in out["violations"])
    assert out["dump"] == []          # nothing cut and passed on as if whole
    res = run_driver(longkv, ["run", "--pool", str(pool)], "lookup x:01\n")
    assert res.stdout.splitlines() == ["error"]
    assert "lookup of key x:01 returned a 20-byte value, longer than CC_VAL_MAX (16)" in res.stderr


@pytest.mark.parametrize("line,needle", [
    ("lookup x:" + "ab" * 25, "bad key 'x:" + "ab" * 25 + "': too many bytes"),
    ("insert x:01 x:" + "ab" * 17, "bad value 'x:" + "ab" * 17 + "': too many bytes"),
])
def test_overlong_history_keys_and_values_are_user_errors(trees_built, tmp_path, line, needle):
    res = run_driver(ROOT / "build" / "trees" / "hart" / "driver-native",
                     ["run", "--pool", str(tmp_path / "p"), "--create", "--size", "4m"], line + "\n")
    assert res.returncode == 2
    assert "line 1" in res.stderr and needle in res.stderr
