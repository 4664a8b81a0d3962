"""A history a person wrote, read into operations a structure can run.

Owns the one reading of history text in the driver's notation (the lines a record's `history`
holds, `insert 1 2`, `delete 1`; model.parse_op and model.validate say what a line means and
whether the structure can run it) for the commands that take a history from outside a fuzz run:
`crashcheck check --history`, `crashcheck replay` (a record's lines) and the pytest plugin's
`check_history`. Every bad line is one UsageError naming it: an unknown operation, too few or too
many fields, a key or value that does not parse or that the structure cannot take. Never runs or
checks anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from crashcheck.harness.core.errors import UsageError
from crashcheck.specs.model import Model, Workload, with_load


def limits_of(structure) -> dict:
    """What model.validate needs to know of STRUCTURE (its `driver info`)."""
    return {"name": structure.name, "key_kind": structure.key_kind, "value_size": structure.value_size,
            "value_min": structure.value_min, "map_ops": structure.map_ops}


def parse_lines(where: str, lines: Iterable[str], what: str, structure, model: Model) -> list:
    """The operations of LINES in MODEL's notation, each one STRUCTURE can run, or UsageError
    naming WHERE (a file, or "--history"), WHAT (history, followup) and the line."""
    limits = limits_of(structure)
    ops = []
    for i, line in enumerate(lines):
        try:
            op = model.parse_op(line)
        except (ValueError, IndexError, OverflowError) as exc:
            raise UsageError(f"{where}: bad {what} line {i} {line[:60]!r} "
                             f"({'too few fields' if isinstance(exc, IndexError) else exc})") from None
        # (a parser may ignore trailing fields: `delete 1 2` would run as `delete 1`)
        fields, wanted = len(line.split()), len(model.op_text(op).split())
        why = model.validate(op, limits) or (f"{fields} fields, {wanted} wanted" if fields > wanted else None)
        if why:
            raise UsageError(f"{where}: bad {what} line {i} {line[:60]!r} ({why})")
        ops.append(op)
    return ops


def split_text(text: str) -> list[str]:
    """The operation lines of TEXT: one per line or `;`-separated (as the summary prints a
    history), blank parts and `#` comments left out."""
    out = []
    for raw in text.splitlines():
        for part in raw.split("#", 1)[0].split(";"):
            if part.strip():
                out.append(" ".join(part.split()))
    return out


def read_history(source: str, structure, model: Model, load: int = 0) -> Workload:
    """The history SOURCE names (a file of one operation per line, or, when no such file exists and
    it holds an operation's words, the operations themselves: `insert 1 2; delete 1`) as a
    Workload whose first LOAD operations are set-up, never crash-checked; UsageError on a missing
    file, an empty history, a bad line or a LOAD past the history's end."""
    path = Path(source)
    try:
        is_file, exists = path.is_file(), path.exists()
    except OSError:        # a name no file can have (operations longer than a file name may be)
        is_file = exists = False
    if is_file:
        try:
            text, where = path.read_text(), source
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{source}: cannot read the history ({exc})") from None
    elif exists or not any(c.isspace() for c in source.strip()):
        # a directory, or one word (`hist.txt`, a file that is not there): not operations
        raise UsageError(f"{source}: no such history file (or give the operations themselves, "
                         "e.g. --history 'insert 1 2; delete 1')")
    else:
        text, where = source, "--history"
    ops = parse_lines(where, split_text(text), "history", structure, model)
    if not ops:
        raise UsageError(f"{where}: the history has no operation")
    if not 0 <= load < len(ops):
        raise UsageError(f"--load {load}: the history has {len(ops)} operations, and at least the last "
                         "must be crash-checked")
    return with_load(ops, load)


__all__ = ["limits_of", "parse_lines", "read_history", "split_text"]
