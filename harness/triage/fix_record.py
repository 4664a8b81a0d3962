"""The `fix` field of a bug record: the fix searched and proven on the trace, for people.

Owns turning a finding's FixResult (harness/check/fix_search.py) into the JSON of
docs/bug-record.md: where the statement goes (file, line, before or after it), the statement, the
edits in words, the histories it was proven for (and any it was not), and a few source lines around
the place, so the report can show the suggestion inside the code without reading anything else.
Never searches or proves anything.
"""
from __future__ import annotations


from crashcheck.harness.check.fix_search import FixResult, describe, statement
from crashcheck.harness.core.paths import source

CONTEXT = 3
KEEP_REJECTED = 5


def _excerpt(file: str, line: int) -> list[list]:
    try:
        text = source(file).read_text(errors="replace").splitlines()
    except OSError:
        return []
    lo, hi = max(1, line - CONTEXT), min(len(text), line + CONTEXT)
    return [[n, text[n - 1]] for n in range(lo, hi + 1)]


def fix_json(fix: FixResult | None) -> dict | None:
    """FIX as a record's `fix`; None for a finding not about ordering (no search was made)."""
    if fix is None:
        return None
    out = {"found": fix.found, "tried": fix.tried, "search_s": round(fix.seconds, 2),
           "rejected": fix.rejected[:KEEP_REJECTED], "reason": fix.reason}
    if not fix.found:
        return out
    edits = []
    for i, e in enumerate(fix.edits):
        j = e.as_json()
        j["statement"] = fix.statements[i] if i < len(fix.statements) else statement(None, e)
        j["lines"] = _excerpt(j["file"], j["line"])
        edits.append(j)
    first = edits[0]
    out.update({"file": first["file"], "line": first["line"], "where": first["where"],
                "statement": " ".join(e["statement"] for e in edits), "text": describe(fix.edits),
                "edits": edits, "proven_for": fix.proven_for, "failed_for": fix.failed_for,
                "general": len(fix.proven_for) > 1 and not fix.failed_for, "complete": fix.complete})
    return out


def fix_line(fix: dict | None) -> str:
    """The fix in one line for the terminal summary ('' when there is no search)."""
    if not fix:
        return ""
    if not fix.get("found"):
        return f"fix: none proven ({fix.get('reason') or 'no candidate'})"
    n, bad = len(fix.get("proven_for") or []), len(fix.get("failed_for") or [])
    proven = f"proven on {n} histor{'y' if n == 1 else 'ies'}" + (f", not on {bad}" if bad else "")
    return f"fix: {fix['text']}: `{fix['statement']}` ({proven})"


__all__ = ["fix_json", "fix_line"]
