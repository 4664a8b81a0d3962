"""The timeline picture of a bug: the in-flight operation's stores, flushes and fences as SVG.

Owns the drawing only; the events come from a bug record's `timeline` (docs/bug-record.md).
Stores sit in the top lane, coloured by what the crash left of them (durable, persisted, lost);
flushes in the middle lane; fences cross both lanes; the crash point is a red dashed line. Each
mark carries a <title> (the browser's tooltip) with the event and its source line.
"""
from __future__ import annotations

from html import escape

STORE_COLOURS = {"durable": "#6b7280", "persisted": "#16a34a", "lost": "#dc2626"}
STEP = 26
LEFT = 70
MAX_EVENTS = 48


def render_timeline(events: list[dict], crash_index: int | None) -> str:
    """SVG text for EVENTS (timeline entries); CRASH_INDEX = how many of them precede the crash."""
    shown = events
    skipped = 0
    if len(events) > MAX_EVENTS:
        # Keep the events nearest the crash: that is where the story is.
        end = len(events) if crash_index is None else min(len(events), crash_index + 4)
        start = max(0, end - MAX_EVENTS)
        shown = events[start:end]
        skipped = start
        if crash_index is not None:
            crash_index -= start
    width = LEFT + STEP * (len(shown) + 1) + 20
    height = 118
    y_store, y_flush, y_axis = 28, 62, 92
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline of the operation in flight">',
             f'<text x="4" y="{y_store + 4}" class="lane">stores</text>',
             f'<text x="4" y="{y_flush + 4}" class="lane">flushes</text>',
             f'<line x1="{LEFT - 8}" y1="{y_axis}" x2="{width - 10}" y2="{y_axis}" class="axis"/>']
    if skipped:
        parts.append(f'<text x="{LEFT - 8}" y="{y_axis + 22}" class="lane">{skipped} earlier events not shown</text>')
    for i, ev in enumerate(shown):
        x = LEFT + STEP * i
        where = f"line {ev['line']}" if ev.get("line") else "no source line"
        kind = ev["kind"] + (f".{ev['sub']}" if ev.get("sub") else "")
        tip = f"#{ev['seq']} {kind}"
        if ev.get("off") is not None and ev["kind"] in ("store", "ntstore", "flush"):
            tip += f" +{ev['off']:#x}"
            if ev["kind"] != "flush":
                tip += f" ({ev['size']} bytes)"
        if ev.get("state"):
            tip += f", {ev['state']}"
        tip = escape(f"{tip}; {where}")
        if ev["kind"] in ("store", "ntstore"):
            colour = STORE_COLOURS.get(ev.get("state", "durable"), "#6b7280")
            shape = (f'<rect x="{x - 6}" y="{y_store - 6}" width="12" height="12" fill="{colour}"/>'
                     if ev["kind"] == "ntstore" else
                     f'<circle cx="{x}" cy="{y_store}" r="7" fill="{colour}"/>')
            parts.append(f'<g>{shape}<title>{tip}</title></g>')
        elif ev["kind"] == "flush":
            parts.append(f'<g><path d="M{x - 7},{y_flush - 7} L{x + 7},{y_flush - 7} L{x},{y_flush + 7} Z" '
                         f'fill="#2563eb"/><title>{tip}</title></g>')
        elif ev["kind"] == "fence":
            parts.append(f'<g><line x1="{x}" y1="{y_store - 14}" x2="{x}" y2="{y_axis}" class="fence"/>'
                         f'<title>{tip}</title></g>')
        else:
            parts.append(f'<g><circle cx="{x}" cy="{y_axis}" r="3" fill="#9ca3af"/><title>{tip}</title></g>')
        if ev.get("line"):
            parts.append(f'<text x="{x}" y="{y_axis + 12}" class="tick">{ev["line"]}</text>')
    if crash_index is not None:
        x = LEFT + STEP * crash_index - STEP // 2
        parts.append(f'<line x1="{x}" y1="8" x2="{x}" y2="{y_axis + 4}" class="crash"/>'
                     f'<text x="{x + 4}" y="12" class="crashlabel">crash</text>')
    parts.append("</svg>")
    return "".join(parts)
