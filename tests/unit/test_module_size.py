"""No module of harness/ grows past MAX_LINES lines without saying why at its top: a long module
usually holds several jobs, and a newcomer should find one job per file. A module that
is long for a reason says so in its opening docstring, in a sentence starting with MARKER
("Longer than 400 lines because ...").
"""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAX_LINES = 400
MARKER = "Longer than 400 lines because"
TOP_LINES = 40                  # the reason must be this near the top, where a reader starts
# Modules over the limit that another change splits; each with why it is here. Keep this short.
KNOWN: set[str] = set()


def too_long(path: Path) -> bool:
    """PATH passes MAX_LINES without MARKER in its first TOP_LINES lines."""
    lines = path.read_text().splitlines()
    return len(lines) > MAX_LINES and not any(MARKER in line for line in lines[:TOP_LINES])


def test_no_harness_module_is_long_without_a_reason():
    long = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "harness").rglob("*.py") if too_long(p))
    assert [p for p in long if p not in KNOWN] == [], (
        f"over {MAX_LINES} lines without '{MARKER} ...' near the top: split the module by its jobs, "
        "or say why it must be one")


def test_known_exceptions_are_still_long():
    # an exception that was split must leave the list, so the list never hides a new giant
    for name in KNOWN:
        path = ROOT / name
        if path.exists():
            assert too_long(path), f"{name} is no longer over {MAX_LINES} lines: remove it from KNOWN"


@pytest.mark.parametrize("lines, top, long", [
    (MAX_LINES, "", False),                                    # at the limit: fine
    (MAX_LINES + 1, "", True),                                 # one past it, no reason: too long
    (MAX_LINES + 1, f'"""Parser.\n\n{MARKER} the grammar is one table.\n"""\n', False),
    (MAX_LINES + 1, '"""Parser."""\n' + "x = 1\n" * TOP_LINES + f"# {MARKER} buried\n", True),
])
def test_the_rule(tmp_path, lines, top, long):
    path = tmp_path / "m.py"
    head = top.splitlines()
    path.write_text("\n".join(head + ["pass"] * (lines - len(head))) + "\n")
    assert too_long(path) is long
