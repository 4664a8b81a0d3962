"""The report's "Suggested fix" box: a record's `fix` (docs/bug-record.md) shown inside the code.

Owns the HTML of one fix: the source excerpt around each edit's line with the suggested statement
inserted before or after it, marked as a suggestion (never as the code that ran), the histories
the fix was proven for, and, when the search found none, why. Reads only the record.
"""
from __future__ import annotations

from markupsafe import Markup, escape


def _histories(rows: list[list[str]]) -> str:
    return "; ".join("<code>" + escape(" / ".join(h)) + "</code>" for h in rows[:4]) + (
        f" and {len(rows) - 4} more" if len(rows) > 4 else "")


def _box(edit: dict) -> str:
    lines = edit.get("lines") or []
    suggestion = (f'<span class="suggest" title="suggested by crashcheck, not in the code">'
                  f'{"+":>5}  {escape(edit.get("statement", ""))}   /* suggested fix */</span>')
    out = []
    for n, text in lines:
        row = f'<span class="{"hit" if n == edit["line"] else ""}">{n:>5}  {escape(text)}</span>'
        if n == edit["line"] and edit.get("where") == "before":
            out.append(suggestion)
        out.append(row)
        if n == edit["line"] and edit.get("where") != "before":
            out.append(suggestion)
    if not lines:
        out.append(suggestion)
    name = f'{escape(edit.get("file") or "?")}:{edit.get("line", 0)}'
    return f'<div class="srcname">{name}</div><pre class="src fix">{"".join(out)}</pre>'


def fix_view(fix: dict | None) -> Markup:
    """The HTML of FIX ('' for a finding not about ordering: no search was made)."""
    if not fix:
        return Markup("")
    if not fix.get("found"):
        return Markup(f'<p class="nofix">No fix proven on the trace: {escape(fix.get("reason") or "no candidate")} '
                      f'({fix.get("tried", 0)} candidates tried in {fix.get("search_s", 0)} s).</p>')
    proven, failed = fix.get("proven_for") or [], fix.get("failed_for") or []
    text = (f'<p class="fixtext">{escape(fix.get("text", ""))}. Proven on the trace: with it every crash '
            f'state{"" if fix.get("complete", True) else " checked"} of {len(proven)} '
            f'failing histor{"y" if len(proven) == 1 else "ies"} passes ({_histories(proven)})')
    if failed:
        text += f'; not enough for {len(failed)} other{"s" if len(failed) != 1 else ""} ({_histories(failed)})'
    text += (f'. {fix.get("tried", 0)} candidate{"s" if fix.get("tried", 0) != 1 else ""} tried in '
             f'{fix.get("search_s", 0)} s.</p>')
    return Markup(text + "".join(_box(e) for e in fix.get("edits") or []))


__all__ = ["fix_view"]
