"""Concurrent checking end to end: the driver's thread sections (docs/trees.md "Threads"),
`crashcheck fuzz --threads`, HART's seeded concurrency bugs (trees/hart/bugs.json entries with
"threads"), and replay of a recorded schedule."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from cli_run import run_cli

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / "build" / "trees"
MT_BUGS = [(b["name"], b["class"]) for b in json.loads((ROOT / "trees/hart/bugs.json").read_text())
           if b.get("threads", 1) > 1 and b["class"] != "persistency-race"]   # (found with a crash: below)
HISTORY = "insert 1 10\ninsert 2 20\nthread 1\ninsert 3 30\nlookup 1\nthread 2\ninsert 3 31\ndelete 2\nthread 3\nlookup 3\n"


def run_driver(tmp_path: Path, history: str, sched: str | None, tree: str = "hart", bug: str | None = None,
               out: str = "r") -> tuple[subprocess.CompletedProcess, list[str], str]:
    """`driver run` of HISTORY under CRASHCHECK_SCHED=SCHED; (process, result lines, schedule text)."""
    hist = tmp_path / "h.txt"
    hist.write_text(history)
    pool, results, schedule = tmp_path / f"{out}.pool", tmp_path / f"{out}.results", tmp_path / f"{out}.sched"
    pool.unlink(missing_ok=True)
    env = {"PATH": "/usr/bin:/bin"}
    if sched:
        env |= {"CRASHCHECK_SCHED": sched, "CRASHCHECK_SCHED_OUT": str(schedule)}
    exe = BUILD / tree / (f"driver-bug-{bug}" if bug else "driver")
    p = subprocess.run([str(exe), "run", "--pool", str(pool), "--create", "--size", "8m", "--check",
                        "--results", str(results), str(hist)], capture_output=True, text=True, env=env, timeout=60)
    lines = results.read_text().splitlines() if results.exists() else []
    return p, lines, schedule.read_text() if schedule.exists() else ""


@pytest.mark.parametrize("tree, safe", [("hart", True), ("heart", True), ("rangelock", True),
                                        ("wort", False), ("woart", False), ("artcow", False)])
def test_driver_info_says_whether_threads_are_allowed(trees_built, tree, safe):
    info = json.loads(subprocess.run([str(BUILD / tree / "driver"), "info"], capture_output=True, text=True).stdout)
    assert info["threads"] is safe


def test_threaded_run_writes_calls_and_returns_in_schedule_order(trees_built, tmp_path):
    p, lines, schedule = run_driver(tmp_path, HISTORY, "random:5")
    assert p.returncode == 0, p.stderr
    # load phase: plain results; then each operation's call and return, in the schedule's order
    assert lines[:3] == ["!ready", "ok", "ok"] and lines[-1] == "!end 7"
    calls = [x for x in lines if x.startswith("!call ")]
    rets = [x for x in lines if x.startswith("!ret ")]
    assert sorted(calls) == ["!call 1 2", "!call 1 3", "!call 2 4", "!call 2 5", "!call 3 6"]
    got = {r.split()[2]: r.split(" ", 3)[3] for r in rets}
    assert sorted(got) == ["2", "3", "4", "5", "6"]
    assert [r.split()[1] for r in sorted(rets, key=lambda r: r.split()[2])] == ["1", "1", "2", "2", "3"]
    assert got["3"] == "value 10" and got["5"] == "ok"       # lookup 1, delete 2: no other thread touches them
    # exactly one of the two inserts of key 3 wins, and lookup 3 sees the winner or nothing
    assert sorted([got["2"], got["4"]]) == ["exists", "ok"]
    winner = "30" if got["2"] == "ok" else "31"
    assert got["6"] in ("notfound", f"value {winner}")
    for i in "23456":            # a call comes before its return
        assert lines.index(next(c for c in calls if c.endswith(f" {i}"))) < lines.index(
            next(r for r in rets if r.split()[2] == i))
    assert schedule.startswith("# crashcheck-schedule 1\n# strategy random:5\n") and "# result ok" in schedule


def test_same_seed_same_schedule_and_results_and_replay(trees_built, tmp_path):
    runs = [run_driver(tmp_path, HISTORY, "random:11", out=f"r{i}") for i in range(2)]
    (p1, l1, s1), (p2, l2, s2) = runs
    assert p1.returncode == p2.returncode == 0
    assert l1 == l2 and s1 == s2 and "# switches 0" not in s1
    other = [run_driver(tmp_path, HISTORY, f"random:{seed}", out=f"o{seed}")[2] for seed in (12, 13, 14)]
    assert any(o.splitlines()[3:] != s1.splitlines()[3:] for o in other)   # the seed matters
    (tmp_path / "replay.sched").write_text(s1)
    p3, l3, s3 = run_driver(tmp_path, HISTORY, f"replay:{tmp_path / 'replay.sched'}", out="r3")
    assert p3.returncode == 0 and l3 == l1
    assert [x for x in s3.splitlines() if not x.startswith("#")] == [x for x in s1.splitlines() if not x.startswith("#")]


def test_thread_sections_are_refused_by_a_tree_that_is_not_thread_safe(trees_built, tmp_path):
    p, lines, _ = run_driver(tmp_path, "insert 1 1\nthread 1\nlookup 1\n", None, tree="wort")
    assert p.returncode == 2 and lines == []
    assert p.stderr.strip().count("\n") == 0 and "wort is not thread-safe" in p.stderr


def test_thread_sections_must_be_numbered_in_order(trees_built, tmp_path):
    p, _, _ = run_driver(tmp_path, "thread 2\nlookup 1\n", None)
    assert p.returncode == 2 and "line 1: expected 'thread 1'" in p.stderr


def test_threaded_run_without_the_scheduler_still_runs(trees_built, tmp_path):
    p, lines, _ = run_driver(tmp_path, HISTORY, None)
    assert p.returncode == 0 and lines[-1] == "!end 7"
    assert sum(x.startswith("!ret ") for x in lines) == 5


def test_lock_order_bug_deadlocks_under_the_scheduler(trees_built, tmp_path):
    h = "insert 1 1\nthread 1\ninsert 2 5\nthread 2\ndelete 1\n"
    p, _, schedule = run_driver(tmp_path, h, "random:1", bug="mt-lock-order")
    assert p.returncode == 86
    assert ("crashcheck: sched: deadlock at step" in p.stderr and "waits for mutex #1 held by thread 2" in p.stderr
            and "waits for rwlock (write) #3 held by thread 1" in p.stderr)
    assert "# result deadlock" in schedule


# -- crashcheck fuzz --threads -------------------------------------------------------------------

def test_fuzz_refuses_threads_for_a_thesis_tree(trees_built):
    res = run_cli("fuzz", "wort", "--threads", "2", "--examples", "2")
    assert res.returncode == 2
    assert res.stderr.strip() == ("crashcheck: error: wort is not thread-safe (its adapter does not set .threads), "
                                  "so it cannot be fuzzed with --threads 2")


@pytest.mark.parametrize("n", ["0", "5"])
def test_fuzz_threads_out_of_range(trees_built, n):
    res = run_cli("fuzz", "hart", "--threads", n, "--examples", "2")
    assert res.returncode == 2 and "--threads must be between 1 and 4" in res.stderr


def fuzz(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "hart", "--quiet", "--json", out, *args, timeout=600)
    return res, json.loads(out.read_text()) if out.exists() else {}


def test_correct_hart_passes_with_three_threads(trees_built, tmp_path):
    res, data = fuzz(tmp_path, "--threads", "3", "--examples", "40", "--seed", "1", "--limit", "8")
    assert res.returncode == 0, res.stdout + res.stderr
    st = data["per_structure"][0]["stats"]
    # the 40 drawn histories, then one crossing history per capacity point after the last batch
    # (issue 50: harness/run/crossing.py CROSS_FIXED with --examples)
    assert st["capacity_histories"] == len(st["capacity"]) >= 1
    assert st["histories"] == 40 + st["capacity_histories"] and st["threads"] == 3 and data["bugs"] == []
    # crash states of the threaded traces were explored too, and the summary says how
    assert st["crash_points"] > 0 and st["states_explored"] > 0 and st["states_checked"] > 0
    assert ("threads: 3 per history under the deterministic scheduler: linearizability, deadlock, livelock "
            "and invariants checked; crash states judged by durable linearizability, with the follow-up "
            "workload, the leak check and crashes inside recovery") in res.stdout
    # clean runs are followed by aimed ones (harness/check/aims.py), counted and said
    assert st["aimed_runs"] > 0 and f"aimed runs: {st['aimed_runs']} crash-free runs holding a thread" in res.stdout


@pytest.mark.parametrize("bug, cls", MT_BUGS, ids=[b for b, _ in MT_BUGS])
def test_hart_concurrency_bug_found_and_replayed(trees_built, tmp_path, bug, cls):
    # threads: the catalog's 3; the run ends with the batch that finds the class
    res, data = fuzz(tmp_path, "--bug", bug, "--examples", "40", "--seed", "1", "--stop-on", cls)
    assert res.returncode == 1, res.stdout + res.stderr
    classes = {b["class"] for b in data["bugs"]}
    assert cls in classes, (classes, res.stdout)
    rec = next(b for b in data["bugs"] if b["class"] == cls)
    # --sched mixed draws random or pct; a clean run's aimed run (harness/check/aims.py) is `aim:`
    assert rec["threads"] == 3 and rec["sched"].split(":")[0] in ("random", "pct", "aim")
    assert rec["schedule"].startswith("# crashcheck-schedule 1") and len(rec["thread_of"]) == len(rec["history"])
    path = tmp_path / "r.bugs" / f"{rec['id']}.json"
    replay = run_cli("replay", path, timeout=120)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert f"reproduced without any crash: {cls}:" in replay.stdout
    assert "(replayed from the record)" in replay.stdout


def test_fuzz_with_threads_is_deterministic(trees_built, tmp_path):
    runs = []
    for i in range(2):
        d = tmp_path / str(i)
        d.mkdir()
        res, data = fuzz(d, "--bug", "mt-insert-read-lock", "--examples", "16", "--seed", "1")
        assert res.returncode == 1
        runs.append([(b["class"], b["history"], b["thread_of"], b["sched"], b["schedule"], b["detail"])
                     for b in data["bugs"]])
    assert runs[0] == runs[1] and runs[0]


def test_pytest_gate_carries_threads(trees_built, crashcheck):
    result = crashcheck.run("hart", bug="mt-lock-order", seed=1, examples=40, stop_on_class="deadlock")
    assert "deadlock" in result.classes
    rec = next(b for b in result.unexpected if b["class"] == "deadlock")
    assert rec["threads"] == 3 and "# result deadlock" in rec["schedule"]
    assert result.results["per_structure"][0]["stats"]["threads"] == 3


def test_crash_states_of_threaded_traces_are_judged(trees_built, crashcheck, tmp_path):
    """A single-thread crash bug (PNewV persisted before the value) shows up in a crash state of a
    2-thread trace, judged by durable linearizability; its record replays (the same schedule, the
    same crash state) with the same class."""
    # shrink=4: the record need not be minimal here, and each threaded try is a whole run
    result = crashcheck.run("hart", bug="pnewv-before-value", seed=1, examples=24, threads=2, limit=8,
                            max_ops=24, stop_on_class="wrong-value", shrink=4)
    rec = next(b for b in result.unexpected if b["class"] == "wrong-value")
    assert rec["threads"] == 2 and rec["crash"]["index"] is not None and rec["schedule"]
    assert "no linearization of the completed operations plus in-flight ones ends in the recovered state" in rec["detail"]
    # the history carries its follow-up workload, run after every recovery as for one thread
    assert rec["followup"] and rec["followup"][0].startswith("lookup ")
    path = tmp_path / "rec.json"
    path.write_text(json.dumps(rec))
    replay = run_cli("replay", path, timeout=120)
    assert replay.returncode == 1 and "reproduced: wrong-value:" in replay.stdout, replay.stdout + replay.stderr


def test_leaks_of_threaded_crash_states_are_found(trees_built, crashcheck):
    """The leak check runs on crash states of threaded traces: the update log persisted after
    the data it protects leaks the old value when two threads update."""
    result = crashcheck.run("hart", bug="ulog-after-data", seed=1, examples=24, threads=2, limit=4,
                            max_ops=24, recovery_crashes=0, stop_on_class="leak", shrink=4)
    rec = next(b for b in result.unexpected if b["class"] == "leak")
    assert rec["threads"] == 2 and rec["crash"]["index"] is not None and rec["leaks"]
    assert all(leak["size"] > 0 for leak in rec["leaks"]) and "unreachable after recovery" in rec["detail"]


def test_no_pm_structure_is_checked_for_linearizability_only(trees_built, tmp_path):
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "rangelock", "--threads", "2", "--examples", "10", "--quiet", "--json", out, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    st = json.loads(out.read_text())["per_structure"][0]["stats"]
    assert st["histories"] == 10 and st["crash_points"] == 0 and "no crash states explored" in res.stdout


def test_list_shows_the_threads_a_bug_needs(trees_built):
    rows = json.loads(run_cli("list", "--json").stdout)
    hart = next(r for r in rows if r["name"] == "hart")
    assert {b["name"]: b["threads"] for b in hart["bugs"] if b["threads"] > 1} == {
        "mt-insert-read-lock": 3, "mt-check-unlocked": 3, "mt-lock-order": 3, "bit-persist-unlocked": 3}
    assert all(b["threads"] == 1 for r in rows if r["name"] in ("wort", "woart", "artcow") for b in r["bugs"])
