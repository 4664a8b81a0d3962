"""A crash in a threaded run names the operation that crashed.

Uses the range lock's seeded `release-unheld-null` (trees/rangelock/bugs.json): a release of a
range nobody holds dereferences NULL. With three threads the release that dies may be thread 3's,
after operations of other threads returned and while another thread's operation is in flight; the
driver's fault handler (trees/common/fault.c) writes `!fault T I SIG` and harness/check/traced_run.py
names that operation, so one root cause is one bug and the lanes keep the results of the
operations that returned.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from cli_run import run_cli

from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.target import structures
from crashcheck.harness.check import threads
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.triage.record_formats import check_record
from crashcheck.harness.triage.records import build_record
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.core.supervise import RunEnd
from crashcheck.harness.check.traced_run import run_failure
from crashcheck.specs import registry

ROOT = Path(__file__).resolve().parents[2]
BUG = "release-unheld-null"
DRIVER = ROOT / "build" / "trees" / "rangelock" / f"driver-bug-{BUG}"
# random:0 runs thread 1's trylock, thread 3's (failing) trylock and thread 2's trylock to their
# returns, then thread 3's release of the range it never got dies while thread 2's release is in
# flight (operation 0 is a trylock that returned: what today's naming said had died)
HISTORY = "thread 1\ntrylock 1 2\nthread 2\ntrylock 3 4\nrelease 3 4\nthread 3\ntrylock 2 3\nrelease 2 3\n"
RL = registry.get("range_lock")


def run_driver(tmp_path: Path, history: str, sched: str | None) -> tuple[int, list[str]]:
    """The traced bug driver on HISTORY (under SCHED): its exit status and result lines."""
    (tmp_path / "h").write_text(history)
    env = dict(os.environ, CRASHCHECK_TRACE=str(tmp_path / "trace"))
    env.pop("CRASHCHECK_SCHED", None)
    if sched:
        env["CRASHCHECK_SCHED"] = sched
    p = subprocess.run([DRIVER, "run", "--results", tmp_path / "r", tmp_path / "h"], env=env,
                       capture_output=True, timeout=60)
    return p.returncode, (tmp_path / "r").read_text().splitlines()


def test_driver_writes_the_faulting_thread_and_operation(trees_built, tmp_path):
    code, lines = run_driver(tmp_path, HISTORY, "random:0")
    # still dies of the signal, after the line
    assert code == -11, (code, lines)
    assert lines[-1] == "!fault 3 4 11", lines
    # another thread's operation was in flight too: the `!call` / `!ret` lines alone cannot tell
    called = {int(x.split()[2]) for x in lines if x.startswith("!call ")}
    returned = {int(x.split()[2]) for x in lines if x.startswith("!ret ")}
    assert called - returned == {2, 4}
    # the runtime's own handler still ran after ours: the trace was flushed up to the fault
    trace = read_trace(tmp_path / "trace", check_images=False)
    begun = [ev for ev in trace.events if ev.kind == "op_begin"]
    assert not trace.complete and (begun[-1].addr, begun[-1].tid) in {(4, 3), (2, 2)}
    assert any(ev.addr == 4 and ev.tid == 3 for ev in begun)


def test_single_threaded_fault_names_thread_zero(trees_built, tmp_path):
    code, lines = run_driver(tmp_path, "trylock 1 2\nrelease 5 6\n", None)
    assert code == -11 and lines == ["!ready", "ok", "!fault 0 1 11"], (code, lines)


@pytest.fixture(scope="module")
def checked(trees_built):
    """The outcome of HISTORY checked under random:0, and its settings."""
    settings = Settings(seed=1)
    with Checker(structures.get("rangelock"), BUG, settings) as checker:
        ops = threads.parse_text(checker.model, HISTORY, "random:0")
        return checker.check(ops), settings


def test_threaded_crash_names_the_operation_that_crashed(checked):
    out, _ = checked
    [f] = out.findings
    assert f.cls == "operation-crash"
    assert "`release 2 3` (operation 4, thread 3) died of SIGSEGV" in f.detail, f.detail
    assert f.group == ("operation-crash", "release: SIGSEGV (signal 11)") and f.op_index == 4


def test_lanes_of_returned_operations_carry_their_results(checked, tmp_path):
    out, settings = checked
    rec = check_record(build_record(structure="rangelock", bug=BUG, settings=settings, outcome=out,
                                    finding=out.findings[0], ident="rl", bugdir=tmp_path), "test")
    # the operations that returned carry their results; the two in flight have none
    assert [(e["thread"], e["op"], e["result"], e["ret"] is None) for e in rec["lanes"]] == [
        (1, 0, "ok", False), (3, 3, "fail", False), (2, 1, "ok", False), (3, 4, None, True), (2, 2, None, True)]


def end(status: str = "signal", sig: int | None = 11) -> RunEnd:
    return RunEnd(status, signal=sig)


def three_threads():
    return threads.parse_text(RL, HISTORY, "random:0")


def test_without_a_fault_line_one_operation_in_flight_is_named():
    lines = ["!ready", "!call 1 0", "!ret 1 0 ok", "!call 3 3", "!ret 3 3 fail", "!call 3 4"]
    f = run_failure(end(), lines, three_threads(), RL)
    assert "`release 2 3` (operation 4, thread 3) died of SIGSEGV" in f.detail
    assert f.group == ("operation-crash", "release: SIGSEGV (signal 11)") and f.op_index == 4


def test_without_a_fault_line_several_in_flight_are_all_named():
    lines = ["!ready", "!call 1 0", "!ret 1 0 ok", "!call 3 3", "!call 2 1", "!ret 3 3 fail", "!call 3 4",
             "!ret 2 1 ok", "!call 2 2"]
    f = run_failure(end("timeout", None), lines, three_threads(), RL)
    assert f.cls == "operation-hang"
    assert ("one of the operations in flight (`release 2 3` (operation 4, thread 3), `release 3 4` "
            "(operation 2, thread 2))") in f.detail, f.detail
    # both are releases: the group still names the kind
    assert f.group[1].startswith("release: ") and f.op_index is None
    # a fault line, when there is one, decides
    g = run_failure(end(), lines + ["!fault 2 2 11"], three_threads(), RL)
    assert "`release 3 4` (operation 2, thread 2) died" in g.detail and g.op_index == 2


def test_single_threaded_naming_is_unchanged():
    ops = threads.parse_text(RL, "trylock 1 2\nrelease 5 6\n")
    for lines in (["!ready", "ok"], ["!ready", "ok", "!fault 0 1 11"]):
        f = run_failure(end(), lines, ops, RL)
        assert "`release 5 6` (operation 1) died of SIGSEGV" in f.detail, f.detail
        assert f.group == ("operation-crash", "release: SIGSEGV (signal 11)") and f.op_index == 1


def test_fuzz_finds_one_bug_for_one_root_cause(trees_built, tmp_path):
    """`crashcheck fuzz rangelock --threads 3`: before the fix the crashes of some histories were
    named by their operation 0 (a trylock that had returned) and one cause became two bugs."""
    out = tmp_path / "r.json"
    r = run_cli("fuzz", "rangelock", "--bug", BUG, "--threads", "3", "--seed", "1", "--examples", "40",
                "--bugdir", tmp_path / "bugs", "--json", out, "--quiet", timeout=300)
    bugs = json.loads(out.read_text())["bugs"]
    assert [(b["class"], b["group"]) for b in bugs] == [("operation-crash", "release: SIGSEGV (signal 11)")], (
        r.stdout + r.stderr)
    assert ", thread " in bugs[0]["detail"] and "`release " in bugs[0]["detail"]
