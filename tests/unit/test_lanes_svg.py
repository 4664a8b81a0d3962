"""The lanes picture (harness/render/lanes_svg.py) on a hand-written record: one lane per thread, one bar
per operation in call order on an ordinal axis, open-ended bars for operations that never
returned, switch marks on the lane of the thread switched away, the crash line between the
positions it falls between. No driver needed."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from crashcheck.harness.render.lanes_svg import LEFT, STEP, SWITCH_STEP as SW, render_lanes

NS = {"s": "http://www.w3.org/2000/svg"}
LANES = [
    {"thread": 1, "op": 2, "text": "insert 3 30", "result": "ok", "call": 10, "ret": 40},
    {"thread": 2, "op": 4, "text": "insert 3 31", "result": "ok", "call": 20, "ret": 50},
    {"thread": 1, "op": 3, "text": "lookup 1", "result": "value 10", "call": 60, "ret": 70},
    {"thread": 3, "op": 6, "text": "delete 2", "result": None, "call": 65, "ret": None},
]
SWITCHES = [
    {"step": 5, "from": 1, "to": 2, "at": 15, "site": None, "where": "trees/hart/hart.c:120"},
    {"step": 9, "from": 2, "to": 1, "at": 45, "site": None, "where": "pthread_mutex_lock"},
]


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)       # also checks that the SVG is well-formed XML


def test_one_lane_per_thread_and_one_bar_per_operation_in_call_order():
    root = parse(render_lanes(LANES, SWITCHES, crash=62))
    assert [g.get("data-thread") for g in root.findall("s:g[@class='lane']", NS)] == ["1", "2", "3"]
    ops = root.findall("s:g[@class='op']", NS)
    assert [(g.get("data-thread"), g.get("data-op")) for g in ops] == [("1", "2"), ("2", "4"), ("1", "3"), ("3", "6")]
    bars = [g.find("s:rect", NS) for g in ops]
    # the axis, in event order: a wide step before each call, return and crash position (10 20 40
    # 50 60 62 65 70), a narrow one before each switch (15 45)
    at = dict(zip([10, 15, 20, 40, 45, 50, 60, 62, 65, 70],
                  [LEFT + k * STEP + j * SW for k, j in [(0, 0), (0, 1), (1, 1), (2, 1), (2, 2), (3, 2), (4, 2),
                                                          (5, 2), (6, 2), (7, 2)]]))
    x = [float(b.get("x")) for b in bars]
    w = [float(b.get("width")) for b in bars]
    assert x == [at[10], at[20], at[60], at[65]]
    assert w[:3] == [at[40] - at[10], at[50] - at[20], at[70] - at[60]]
    # the two inserts overlap: each was called before the other returned
    assert x[1] < x[0] + w[0] and x[0] < x[1] + w[1]
    # a thread's bars share its lane; different threads' lanes differ
    y = [float(b.get("y")) for b in bars]
    assert y[0] == y[2] and len({y[0], y[1], y[3]}) == 3
    # the operation that never returned runs to the right edge, and began after the crash
    assert bars[3].get("class") == "bar open after" and x[3] + w[3] == at[70] + STEP
    assert [b.get("class") for b in bars[:3]] == ["bar", "bar", "bar"]
    assert ops[3].find("s:title", NS).text == ("thread 3, operation 6: delete 2 -> no return "
                                               "(called at event #65, never returned)")
    assert ops[0].find("s:text", NS).text == "insert 3 30 \u2192 ok"


def test_switch_marks_and_crash_line():
    root = parse(render_lanes(LANES, SWITCHES, crash=62))
    marks = root.findall("s:g[@class='preemption']", NS)
    assert [m.get("data-step") for m in marks] == ["5", "9"]
    assert marks[0].find("s:title", NS).text == ("step 5: thread 1 -> thread 2, switched away at "
                                                 "trees/hart/hart.c:120 (event #15)")
    assert "pthread_mutex_lock" in marks[1].find("s:title", NS).text
    # on the axis a narrow step after the call before them (events 10 and 40)
    tips = [float(m.find("s:path", NS).get("d").split()[-2].split(",")[0].lstrip("L")) for m in marks]
    assert tips == [LEFT + SW, LEFT + 2 * STEP + 2 * SW]
    # each on the lane of the thread switched away: 1, then 2
    lane_y = {g.get("data-thread"): float(g.find("s:line", NS).get("y1")) for g in root.findall("s:g[@class='lane']", NS)}
    marks_y = [float(m.find("s:path", NS).get("d").split()[-2].split(",")[1]) for m in marks]
    assert marks_y[0] < lane_y["1"] < marks_y[1] < lane_y["2"]
    crash = root.findall("s:line[@class='crash']", NS)
    assert len(crash) == 1
    # just before event 62: halfway between 60 and 62 on the axis
    assert float(crash[0].get("x1")) == LEFT + 4.5 * STEP + 2 * SW


def test_no_crash_no_line_and_the_main_thread_lane_only_when_it_switched():
    root = parse(render_lanes(LANES, []))
    assert root.findall("s:line[@class='crash']", NS) == []
    assert [g.get("data-thread") for g in root.findall("s:g[@class='lane']", NS)] == ["1", "2", "3"]
    root = parse(render_lanes(LANES, [{"step": 1, "from": 0, "to": 1, "at": 5, "site": None,
                                       "where": "pthread_create"}]))
    assert [g.get("data-thread") for g in root.findall("s:g[@class='lane']", NS)] == ["0", "1", "2", "3"]


def test_labels_are_escaped_and_cut_to_fit():
    lanes = [{"thread": 1, "op": 0, "text": "insert <a&b> " + "x" * 80, "result": "ok", "call": 1, "ret": 2}]
    svg = render_lanes(lanes, [])
    label = parse(svg).find("s:g[@class='op']/s:text", NS).text
    # one step wide: (84 - 8) / 6.2 = 12 characters, the last one the ellipsis; the tooltip keeps all
    assert label == "insert <a&b\u2026"
    assert "x" * 80 in parse(svg).find("s:g[@class='op']/s:title", NS).text
    assert "<a&b>" not in svg
