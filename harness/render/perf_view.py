"""The report's "Useless persistence" section (`crashcheck fuzz --perf`): per structure, the
flushes and fences that did nothing, per kind of operation and per source site.

Owns the HTML of one per-structure `perf` object of a results file (docs/bug-record.md). Never a
bug and never counted with them: it says what a structure pays for nothing. Reads only the results.
"""
from __future__ import annotations

from markupsafe import Markup, escape

KINDS = ("flush-clean-line", "flush-repeated", "fence-idle")
WORDS = {"flush-clean-line": "flush of a clean line", "flush-repeated": "repeated flush",
         "fence-idle": "fence with nothing to order"}


def perf_view(name: str, perf: dict | None) -> Markup:
    """The section of structure NAME ('' without --perf)."""
    if not perf:
        return Markup("")
    t = perf.get("totals") or {}
    head = (f'<h3 class="perf">Useless persistence: {escape(name)}</h3><p class="muted">Not bugs: flushes and '
            f'fences that made nothing durable, over {perf.get("histories", 0)} histories '
            f'({perf.get("operations", 0)} operations); {t.get("flushes", 0)} flushes and {t.get("fences", 0)} '
            f'persistence fences in all.</p>')
    rows = []
    for op, c in (perf.get("by_operation") or {}).items():
        per = c.get("per_op") or {}
        cells = "".join(f'<td class="num">{per.get(k, 0):.2f}</td>' for k in ("flushes", "fences", *KINDS))
        rows.append(f'<tr><td>{escape(op)}</td><td class="num">{c.get("ops", 0)}</td>{cells}</tr>')
    by_op = ('<table class="perf"><tr><th>operation</th><th>count</th><th>flushes / op</th><th>fences / op</th>'
             + "".join(f"<th>{WORDS[k]}s / op</th>" for k in KINDS) + "</tr>" + "".join(rows) + "</table>")
    sites = "".join(f'<tr><td>{escape(WORDS.get(s["kind"], s["kind"]))}</td><td class="mono">{escape(s["sub"])}</td>'
                    f'<td class="mono">{escape(s["where"])}</td><td>{escape(s["func"])}</td>'
                    f'<td class="num">{s["count"]}</td></tr>' for s in perf.get("sites") or [])
    table = ('<table class="perf"><tr><th>did nothing</th><th>instruction</th><th>source</th><th>function</th>'
             f'<th>count</th></tr>{sites}</table>') if sites else '<p class="none">Every flush and fence did work.</p>'
    return Markup(head + by_op + table)


__all__ = ["perf_view"]
