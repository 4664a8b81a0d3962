"""The report of a concurrent bug: real HART threaded bugs (trees/hart/bugs.json "threads") checked
with a fixed history and scheduler seed that find them at once, their records' `lanes`,
`preemptions` and `lanes_crash` (harness/triage/lanes.py), the switch marks' sites from the runtime
(docs/scheduler.md "Trace marks"), and the HTML section that draws one lane per thread."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from crashcheck.harness.render import report

from crashcheck.harness.target import structures

from crashcheck.harness.check import threads
from crashcheck.harness.check.pipeline import Checker
from crashcheck.harness.triage.record_formats import check_record, check_results
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.triage.records import build_record
from crashcheck.harness.core.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
NS = {"s": "http://www.w3.org/2000/svg"}
# histories (`|` for a new line) and seeds that find each bug in one run
DEADLOCK = ("mt-lock-order", "random:1", "insert 1 1|thread 1|insert 2 5|thread 2|delete 1")
LOST_INSERT = ("mt-check-unlocked", "random:0",
               "insert 1 1|thread 1|insert 3 30|thread 2|insert 3 31|thread 3|lookup 3")
CRASH = ("pnewv-before-value", "random:0", "insert 1 1|thread 1|update 1 2|thread 2|insert 2 3")


def check(bug: str, sched: str, text: str, cls: str, tmp_path: Path):
    """(outcome, record) of the threaded history TEXT of HART with BUG under SCHED; its first
    finding must be of class CLS."""
    settings = Settings(seed=1)
    with Checker(structures.get("hart"), bug, settings) as checker:
        ops = threads.parse_text(checker.model, text.replace("|", "\n"), sched)
        out = checker.check(ops)
    found = [f for f in out.findings if f.cls == cls]
    assert found, [(f.cls, f.detail) for f in out.findings]
    rec = build_record(structure="hart", bug=bug, settings=settings, outcome=out, finding=found[0],
                       ident=f"hart-{bug}", bugdir=tmp_path)
    return out, check_record(rec, "test")       # and it reads back under the schema


def order(lanes: list[dict]) -> list[str]:
    """The calls (c) and returns (r) of LANES by operation index, in axis order."""
    marks = [(e["call"], f"c{e['op']}") for e in lanes] + [(e["ret"], f"r{e['op']}") for e in lanes
                                                           if e["ret"] is not None]
    return [name for _, name in sorted(marks)]


def hart_lines(preemptions: list[dict]) -> list[tuple[str, int]]:
    """(file, line) of the switches that happened inside HART's own code, each checked to exist."""
    out = []
    for p in preemptions:
        m = re.fullmatch(r"(?:.*/)?(trees/hart/[\w.]+\.[ch]):(\d+)", p["where"])
        if m:
            path, line = ROOT / m.group(1), int(m.group(2))
            assert path.is_file() and 1 <= line <= len(path.read_text().splitlines()), p
            out.append((m.group(1), line))
    return out


@pytest.fixture(scope="module")
def hart(trees_built):
    return structures.get("hart")


def test_deadlock_record_has_open_lanes_and_switch_sites(hart, tmp_path):
    out, rec = check(*DEADLOCK, "deadlock", tmp_path)
    assert out.trace is None          # a cut trace is kept for the lanes only, never explored
    lanes = rec["lanes"]
    # both operations began and neither returned: each lane is open-ended
    assert [(e["thread"], e["op"], e["text"], e["result"], e["ret"]) for e in lanes] == [
        (1, 1, "insert 2 5", None, None), (2, 2, "delete 1", None, None)]
    assert order(lanes) == ["c1", "c2"]
    # the lanes' threads are the trace's: each call is an op_begin event of its own thread
    for e in lanes:
        ev = out.run_trace.events[e["call"]]
        assert (ev.kind, ev.addr, ev.tid) == ("op_begin", e["op"], e["thread"])
    pre = rec["preemptions"]
    assert pre and [p["step"] for p in pre] == sorted(p["step"] for p in pre)
    assert all(p["from"] != p["to"] and {p["from"], p["to"]} <= {0, 1, 2} for p in pre)
    # a switch away from thread 1 at the fence of insert's value write (persist.h's fence,
    # inlined: named by the hart.c line that called it, write_value's persist call, itself
    # inlined into hart_insert)
    inside = [(f, n) for f, n in hart_lines(pre)]
    src = (ROOT / "trees/hart/hart.c").read_text().splitlines()
    assert any(f == "trees/hart/hart.c" and "persistent(v, sz);" in src[n - 1]
               and any("static void write_value(" in line for line in src[n - 8:n])
               for f, n in inside), inside
    # switches at interposed lock calls have no site: the mark names the call
    assert {"pthread_mutex_lock", "pthread_rwlock_wrlock"} <= {p["where"] for p in pre if p["site"] is None}
    assert rec["lanes_crash"] is None


def test_linearizability_violation_lanes_follow_the_trace(hart, tmp_path):
    out, rec = check(*LOST_INSERT, "linearizability-violation", tmp_path)
    lanes = rec["lanes"]
    assert [(e["thread"], e["op"], e["text"], e["result"]) for e in lanes] == [
        (1, 1, "insert 3 30", "ok"), (3, 3, "lookup 3", "value 30"), (2, 2, "insert 3 31", "ok")]
    # all three overlap: every call precedes every return
    assert order(lanes) == ["c1", "c3", "c2", "r1", "r3", "r2"]
    for e in lanes:
        assert out.run_trace.events[e["ret"]].kind == "op_end" and out.run_trace.events[e["ret"]].tid == e["thread"]
    # every switch's mark is where the record says, in the run's trace
    for p in rec["preemptions"]:
        ev = out.run_trace.events[p["at"]]
        assert ev.kind == "mark" and ev.tid == p["from"]
        assert ev.data.decode().startswith(f"cc-sched switch step={p['step']} from={p['from']} to={p['to']}")
    assert rec["lanes_crash"] is None


def test_crash_state_of_a_threaded_trace_is_on_the_lanes_axis(hart, tmp_path):
    out, rec = check(*CRASH, "wrong-value", tmp_path)
    assert rec["lanes_crash"] == rec["crash"]["event"] is not None
    calls = {e["op"]: e["call"] for e in rec["lanes"]}
    # the crash lies inside the update (operation 1), which had begun and had not yet returned
    update = next(e for e in rec["lanes"] if e["op"] == 1)
    assert update["call"] < rec["lanes_crash"] < update["ret"] and sorted(calls) == [1, 2]


def lane_svg(html: str) -> ET.Element:
    m = re.search(r'<svg xmlns="http://www.w3.org/2000/svg" class="lanes".*?</svg>', html, re.S)
    assert m, "no lanes picture in the report"
    return ET.fromstring(m.group(0))


def results_of(*records: dict) -> dict:
    return check_results({"crashcheck": 1, "structures": ["hart"], "model": "adr", "strategy": "bounded",
                          "stats": {}, "bugs": list(records)}, "test")


def test_report_draws_one_lane_per_thread(hart, tmp_path):
    _, rec = check(*LOST_INSERT, "linearizability-violation", tmp_path)
    html = report.render(results_of(rec))
    svg = lane_svg(html)
    # the main thread switched too (creating and joining the threads), so it has its lane first
    assert [g.get("data-thread") for g in svg.findall("s:g[@class='lane']", NS)] == ["0", "1", "2", "3"]
    bars = [(g.get("data-thread"), g.get("data-op")) for g in svg.findall("s:g[@class='op']", NS)]
    assert bars == [("1", "1"), ("3", "3"), ("2", "2")]
    assert len(svg.findall("s:g[@class='preemption']", NS)) == len(rec["preemptions"]) > 0
    assert svg.findall("s:line[@class='crash']", NS) == []
    assert "<h3>Scheduler switches" in html and "thread 1 &rarr; thread 0" in html
    assert rec["replay"] in html or rec["replay"].replace("'", "&#39;") in html
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html)


def test_report_of_a_threaded_crash_draws_the_crash_line(hart, tmp_path):
    _, rec = check(*CRASH, "wrong-value", tmp_path)
    svg = lane_svg(report.render(results_of(rec)))
    assert len(svg.findall("s:line[@class='crash']", NS)) == 1


def test_single_threaded_report_has_no_lanes():
    rec = check_record({"id": "b1", "class": "wrong-value", "structure": "wort", "model": "adr",
                        "history": ["insert 1 1"], "crash": {"index": None}}, "test")
    assert rec["lanes"] == [] and rec["preemptions"] == [] and rec["lanes_crash"] is None
    html = report.render(results_of(rec))
    assert 'class="lanes"' not in html and "<h3>Threads</h3>" not in html


def test_schema_refuses_a_lane_that_returns_before_its_call():
    base = {"id": "b1", "class": "deadlock", "structure": "hart", "model": "adr", "history": ["insert 1 1"],
            "crash": {"index": None}}
    lane = {"thread": 1, "op": 0, "text": "insert 1 1", "call": 9, "ret": 12}
    assert check_record(base | {"lanes": [lane]}, "t")["lanes"][0]["result"] is None
    with pytest.raises(UsageError, match=r"lanes\[0\] returns at event 3, before its call at event 9"):
        check_record(base | {"lanes": [lane | {"ret": 3}]}, "t")
    with pytest.raises(UsageError, match=r"lanes\[0\]\.call is missing"):
        check_record(base | {"lanes": [{"thread": 1, "op": 0, "text": "x"}]}, "t")
