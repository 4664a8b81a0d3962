"""Optional map operations: a structure without update, delete or scan says so by leaving the
adapter's verb NULL, and nothing the fuzzer runs on it uses them.

tests/fixtures/insertonly is an insert-only persistent map (insert and lookup only). Its driver
lists its map_ops, refuses a history line using a missing verb with one line, the strategy and the
follow-up workload leave the missing verbs out, and a fuzz run of it checks histories and finds
nothing (before optional operations, every history with a delete crashed its driver)."""
import json
import subprocess
from pathlib import Path

import pytest
from cli_run import run_cli
from hypothesis import given, settings

from crashcheck.specs.map_histories import histories
from crashcheck.specs.ordered_map import followup
from userbuild import build_once

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "insertonly"
ONLY = ("insert", "lookup")


@pytest.fixture(scope="module")
def insertonly(instrument_built):
    return build_once("insertonly", "--adapter", FIXTURE / "adapter.c") / "driver"


def test_driver_lists_its_operations_and_refuses_missing_ones(insertonly, tmp_path):
    info = json.loads(subprocess.run([insertonly, "info"], capture_output=True, text=True, check=True).stdout)
    assert info["map_ops"] == ["insert", "lookup"]
    wort = ROOT / "build" / "trees" / "wort" / "driver-native"
    if wort.exists():
        full = json.loads(subprocess.run([wort, "info"], capture_output=True, text=True, check=True).stdout)
        assert full["map_ops"] == ["insert", "update", "delete", "lookup", "scan"]
    res = subprocess.run([insertonly, "run", "--pool", tmp_path / "p", "--size", "8m", "--create", "-"],
                         input="insert 1 1\ndelete 1\n", capture_output=True, text=True)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["insertonly: <stdin>: line 2: insertonly has no delete "
                                               "(its adapter leaves .remove NULL)"]


@settings(max_examples=60, deadline=None)
@given(histories(max_ops=12, map_ops=ONLY))
def test_histories_and_followup_leave_missing_operations_out(ops):
    assert {op.kind for op in ops} <= set(ONLY)
    assert {op.kind for op in followup(ops, map_ops=ONLY)} <= set(ONLY)


def test_histories_without_map_ops_still_use_every_operation():
    from hypothesis import Phase, find, settings
    # generation only: a history with the operation is all that is asked (shrinking one to the
    # smallest such history took most of half a minute)
    fast = settings(phases=[Phase.generate], database=None)
    for kind in ("update", "delete", "scan"):
        find(histories(max_ops=12), lambda ops, kind=kind: any(op.kind == kind for op in ops), settings=fast)
    assert {op.kind for op in followup([])} == {"insert", "lookup", "scan"}


def test_fuzzing_a_structure_without_delete_finds_nothing(insertonly, tmp_path):
    out = tmp_path / "r.json"
    res = run_cli("fuzz", "insertonly", "--examples", "24", "--seed", "3", "--quiet", "--json", out)
    assert res.returncode == 0, res.stdout + res.stderr
    data = json.loads(out.read_text())
    assert data["bugs"] == [] and data["stats"]["histories"] >= 24
    assert data["stats"]["crash_points"] > 0


def test_stats_knows_user_structures_and_their_operations(insertonly):
    res = run_cli("stats", "insertonly", "--ops", "40")
    assert res.returncode == 0, res.stderr
    rows = [line.split() for line in res.stdout.splitlines()[2:]]
    assert [r[0] for r in rows] == ["insert", "lookup"]
    insert = dict(zip(["stores", "flushes", "fences"], map(float, rows[0][1:])))
    # an insert writes the entry and the count and persists both (clflush + 2 mfences each)
    assert insert["stores"] >= 2 and insert["flushes"] >= 2 and insert["fences"] >= 2
    assert float(rows[1][2]) == 0      # a lookup flushes nothing
