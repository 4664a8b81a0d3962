"""The lanes picture of a concurrent bug: one horizontal lane per thread, as SVG.

Owns the drawing only; the data is a bug record's `lanes`, `preemptions` and `lanes_crash`
(harness/triage/lanes.py, docs/bug-record.md). Each operation is a bar from its call to its return,
labelled with its text and result, as porcupine draws histories; an operation that never returned
runs open-ended to the right edge; a scheduler switch is a small orange mark on the lane of the
thread that was switched away; the crash point is a red dashed line and what began after it is
faded. Every mark carries a <title> (the browser's tooltip).

The horizontal axis is ordinal, like porcupine's: calls, returns, the crash and switches follow
each other in event order, a call, return or crash a wide step after the position before it and a
switch a narrow one, so a short operation is as readable as a long one and a burst of switches
stays apart. Trace event indices themselves (thousands of PM accesses apart) would squeeze most
bars to a sliver.
"""
from __future__ import annotations

from bisect import bisect_left
from html import escape

STEP = 84            # px before a call, return or crash position
SWITCH_STEP = 14     # px before a switch's position
LEFT = 92            # room for the lane names
LANE_H = 44
TOP = 26
BAR_H = 20
CHAR_W = 6.2         # of the 10.5px monospace label: how many characters fit a bar


class Axis:
    """Event index -> x. Every position given gets its own x in event order: a call, return or
    crash position (MAJOR) STEP after the one before it, a switch SWITCH_STEP after, so switches
    between two calls spread out instead of piling up; any other position is interpolated."""

    def __init__(self, major: list[float], minor: list[float]) -> None:
        major_set = set(major)
        self.pos = sorted(major_set | set(minor))
        self.xs: list[float] = []
        x = LEFT
        for i, p in enumerate(self.pos):
            if i:
                x += STEP if p in major_set else SWITCH_STEP
            self.xs.append(x)

    def x(self, p: float) -> float:
        pos, xs = self.pos, self.xs
        if not pos:
            return LEFT
        i = bisect_left(pos, p)
        if i < len(pos) and pos[i] == p:
            return xs[i]
        if i == 0:
            return LEFT - SWITCH_STEP
        if i == len(pos):
            return xs[-1] + SWITCH_STEP
        lo, hi = pos[i - 1], pos[i]
        return xs[i - 1] + (xs[i] - xs[i - 1]) * (p - lo) / (hi - lo)

    def before(self, p: float) -> float:
        """Halfway between position P and the one before it: where "just before P" is drawn."""
        i = bisect_left(self.pos, p)
        if i == 0:
            return self.x(p) - SWITCH_STEP / 2
        return (self.xs[i - 1] + self.x(p)) / 2

    @property
    def right(self) -> float:
        return (self.xs[-1] if self.xs else LEFT) + STEP


def _label(text: str, width: float) -> str:
    fit = max(int(width / CHAR_W), 3)
    return text if len(text) <= fit else text[:fit - 1] + "\u2026"


def render_lanes(lanes: list[dict], preemptions: list[dict], crash: int | None = None) -> str:
    """SVG text for LANES (one entry per operation: thread, op, text, result, call, ret),
    PREEMPTIONS (step, from, to, at, where) and the CRASH position (an event index: the crash is
    just before that event), all on the trace's event axis."""
    threads = sorted({e["thread"] for e in lanes} | {p["from"] for p in preemptions})
    row = {t: k for k, t in enumerate(threads)}
    axis = Axis([e["call"] for e in lanes] + [e["ret"] for e in lanes if e["ret"] is not None]
                + ([crash] if crash is not None else []), [p["at"] for p in preemptions])
    width = int(axis.right + 24)
    height = TOP + LANE_H * len(threads) + 16
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="lanes" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="operations of each thread over time">']
    for t in threads:
        y = TOP + LANE_H * row[t]
        name = f"thread {t}" if t else "main thread"
        parts.append(f'<g class="lane" data-thread="{t}"><line x1="{LEFT - 12}" y1="{y + LANE_H / 2}" '
                     f'x2="{width - 8}" y2="{y + LANE_H / 2}" class="laneline"/>'
                     f'<text x="6" y="{y + LANE_H / 2 + 4}" class="lane">{name}</text></g>')
    for e in lanes:
        y = TOP + LANE_H * row[e["thread"]] + (LANE_H - BAR_H) / 2
        x0 = axis.x(e["call"])
        open_ended = e["ret"] is None
        x1 = axis.right if open_ended else axis.x(e["ret"])
        result = "no return" if open_ended else (e["result"] if e["result"] is not None else "?")
        after = crash is not None and e["call"] >= crash
        cls = "bar" + (" open" if open_ended else "") + (" after" if after else "")
        span = f"events #{e['call']}-#{e['ret']}" if not open_ended else f"called at event #{e['call']}, never returned"
        tip = escape(f"thread {e['thread']}, operation {e['op']}: {e['text']} -> {result} ({span})")
        text = escape(_label(f"{e['text']} \u2192 {result}", x1 - x0 - 8))
        parts.append(f'<g class="op" data-thread="{e["thread"]}" data-op="{e["op"]}">'
                     f'<rect class="{cls}" x="{x0:.1f}" y="{y:.1f}" width="{max(x1 - x0, 4):.1f}" '
                     f'height="{BAR_H}" rx="3"/><text x="{x0 + 4:.1f}" y="{y + BAR_H - 6:.1f}" '
                     f'class="oplabel">{text}</text><title>{tip}</title></g>')
    for p in preemptions:
        x = axis.x(p["at"])
        y = TOP + LANE_H * row[p["from"]] + (LANE_H - BAR_H) / 2 - 2
        tip = escape(f"step {p['step']}: thread {p['from']} -> thread {p['to']}, "
                     f"switched away at {p.get('where') or 'unknown'} (event #{p['at']})")
        parts.append(f'<g class="preemption" data-step="{p["step"]}"><path d="M{x - 4:.1f},{y - 6:.1f} '
                     f'L{x + 4:.1f},{y - 6:.1f} L{x:.1f},{y:.1f} Z"/><title>{tip}</title></g>')
    if crash is not None:
        x = axis.before(crash)
        parts.append(f'<line x1="{x:.1f}" y1="{TOP - 18}" x2="{x:.1f}" y2="{height - 4}" class="crash"/>'
                     f'<text x="{x + 4:.1f}" y="{TOP - 8}" class="crashlabel">crash</text>')
    parts.append("</svg>")
    return "".join(parts)


__all__ = ["render_lanes"]
