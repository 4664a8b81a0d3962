"""Lazy exploration on the built-in structures: state by state the same results as exhaustive.

Each tree's driver runs a short history traced; at every crash point small enough to enumerate
(at most SMALL legal states) every legal state is checked on its own (exhaustive) and the point
is explored lazily. Every member of every lazy class must have got, on its own, the very result
its class got (the whole check output: the dump, the invariant check, the reachable and
allocated objects, the follow-up's answers), and the classes must partition the legal states.
Then the whole trace is explored lazily: every crash point must be covered completely.
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from crashcheck.crashsim import Runner, Simulator, read_trace
from crashcheck.crashsim.explore import explore
from crashcheck.crashsim.persistency import ModelOptions
from treeutil import ROOT

POOL_SIZE = 512 << 10
SMALL = 64
HISTORY = ["insert 4096 1", "insert 4097 2", "insert 4352 3", "update 4097 20", "delete 4352",
           "insert 8192 4", "lookup 4097", "delete 4096"]
FOLLOWUP = "lookup 4096\nlookup 4097\nlookup 4352\nlookup 8192\n"
TREES = ["wort", "woart", "artcow", "hart", "heart"]
MODEL = {"heart": ModelOptions(model="eadr")}       # Heart is built for eADR: it never flushes


def traced(tree: str, tmp_path):
    driver = ROOT / "build" / "trees" / tree / "driver"
    env = {k: v for k, v in os.environ.items() if k != "CRASHCHECK_TRACE"}
    ran = subprocess.run([str(driver), "run", "--pool", str(tmp_path / "pool"), "--create", "--size",
                          str(POOL_SIZE)], input="".join(line + "\n" for line in HISTORY),
                         capture_output=True, text=True, timeout=60,
                         env=dict(env, CRASHCHECK_TRACE=str(tmp_path / "trace")))
    assert ran.returncode == 0, ran.stderr
    trace = read_trace(tmp_path / "trace")
    first_op = next(i for i, ev in enumerate(trace.events) if ev.kind == "op_begin")
    return driver, env, trace, first_op


@pytest.mark.parametrize("tree", TREES)
def test_lazy_agrees_with_exhaustive_state_by_state(tree, tmp_path):
    driver, env, trace, first_op = traced(tree, tmp_path)
    small = lambda cp: cp.legal <= SMALL           # noqa: E731
    with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
        eager = {}
        for o in explore(trace, strategy="exhaustive", runner=runner, followup=FOLLOWUP, cache=False,
                         start_event=first_op, points=small, options=MODEL.get(tree)):
            eager.setdefault(o.point.index, {})[tuple(o.choice)] = (o.result.status, o.result.result)
        lazy: dict[int, list] = {}
        for o in explore(trace, strategy="lazy", runner=runner, followup=FOLLOWUP, start_event=first_op,
                         points=small, options=MODEL.get(tree)):
            lazy.setdefault(o.point.index, []).append(o)
    assert eager and eager.keys() == lazy.keys()
    branched = 0
    for index, by_choice in eager.items():
        seen: set = set()
        for o in lazy[index]:
            members = set(o.leaf.members())
            assert len(members) == o.covers and not members & seen
            seen |= members
            for m in members:
                assert by_choice[m] == (o.result.status, o.result.result), (tree, index, m, o.decisions)
        assert seen == set(by_choice)
        branched += len(lazy[index]) > 1
    assert branched, "no crash point needed more than one execution: nothing was tested"


@pytest.mark.parametrize("tree", TREES)
def test_lazy_covers_every_crash_point(tree, tmp_path):
    driver, env, trace, first_op = traced(tree, tmp_path)
    seen = []
    with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
        outs = list(explore(trace, strategy="lazy", runner=runner, followup=FOLLOWUP, start_event=first_op,
                            progress=seen.append, options=MODEL.get(tree)))
    stats = seen[-1]
    legal = sum(cp.legal for cp in Simulator.from_trace(trace, MODEL.get(tree)).crash_points()
                if cp.event >= first_op)
    assert stats.partial == 0 and stats.complete == stats.points_done
    assert stats.covered == legal == stats.legal
    assert stats.executions == sum(o.cached_from is None for o in outs) < legal
    assert all(o.result.status == "ok" for o in outs)


@pytest.mark.parametrize("tree", TREES)
def test_answers_reused_by_what_the_check_read_are_each_states_own(tree, tmp_path, monkeypatch):
    """A crash point answered by an earlier execution whose check read none of its pending lines
    and the same bytes elsewhere (crashcheck.crashsim.lazy.ReadMemo) gets the answer every one of its classes
    gets when it is explored for itself; and it saves executions."""
    driver, env, trace, first_op = traced(tree, tmp_path)

    def run():
        stats = []
        with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
            outs = list(explore(trace, strategy="lazy", runner=runner, followup=FOLLOWUP, start_event=first_op,
                                progress=stats.append, options=MODEL.get(tree)))
        return outs, stats[-1]
    memo_outs, memo_stats = run()
    monkeypatch.setenv("CRASHCHECK_LAZY_MEMO", "0")
    plain_outs, plain_stats = run()
    by_point: dict[int, list] = {}
    for o in plain_outs:
        by_point.setdefault(o.point.index, []).append(o)
    reused = [o for o in memo_outs if o.remembered]
    assert reused, "no crash point was answered by an earlier point's execution: nothing was tested"
    for o in reused:
        # every class the plain search made of the states this answer stands for got it too
        # (a whole point, or one state of a point checked state by state)
        own = [p for p in by_point[o.point.index]
               if o.covers == o.point.legal or p.leaf.contains(o.choice)]
        assert own and all((p.result.status, p.result.result) == (o.result.status, o.result.result)
                           for p in own), (tree, o.point.index, o.choice)
    assert memo_stats.covered == plain_stats.covered and memo_stats.complete == plain_stats.complete
    assert memo_stats.executions < plain_stats.executions


def test_states_cli_reports_lazy_executions(tmp_path, capsys):
    from crashcheck.harness.cli.main import main
    _, _, trace, _ = traced("wort", tmp_path)
    assert main(["states", str(tmp_path / "trace"), "--strategy", "lazy", "--structure", "wort", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(rows) == Simulator.from_trace(trace).count_crash_points()
    assert all(r["complete"] and r["covered"] == r["legal"] for r in rows)
    assert sum(r["executions"] for r in rows) < sum(r["legal"] for r in rows)
    assert main(["states", str(tmp_path / "trace"), "--strategy", "lazy"]) == 2
    assert "--structure" in capsys.readouterr().err


def test_states_cli_counts_cache_hits_apart_from_executions(tmp_path, capsys):
    """The executions column counts the runs the runner made, per crash point; the outcomes the
    image cache answered (a state, or a whole search, seen at an earlier point) are "cached"."""
    from crashcheck.harness.cli.main import main
    driver, env, trace, _ = traced("wort", tmp_path)
    assert main(["states", str(tmp_path / "trace"), "--strategy", "lazy", "--structure", "wort", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    ran: dict[int, int] = {}
    hits: dict[int, int] = {}
    with Runner([str(driver), "serve", "--size", str(POOL_SIZE)], env=env) as runner:
        for o in explore(trace, strategy="lazy", runner=runner, seed=0):
            counts = ran if o.cached_from is None else hits
            counts[o.point.index] = counts.get(o.point.index, 0) + 1
    assert sum(hits.values()) > 0                     # the trace has cache hits to tell apart
    assert {r["index"]: r["executions"] for r in rows if r["executions"]} == ran
    assert {r["index"]: r["cached"] for r in rows if r["cached"]} == hits
