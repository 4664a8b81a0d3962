"""Files a user names on the command line: read as JSON without surprises, compared by identity.

Owns reading a file a user gave (`read_json`): only a regular file, at most MAX_FILE bytes of
UTF-8 JSON without NaN, nested and sized as Python can take, else one UsageError line naming the
file; and whether two paths are one file (`same_file`, so a run never overwrites its input or one
output with another). What the JSON must hold is the caller's (harness/core/schema.py).
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from crashcheck.harness.core.errors import UsageError

MAX_FILE = 1 << 30             # bytes; a results file of a long run with many bugs stays far below


def read_json(path: str | os.PathLike, what: str) -> Any:
    """The JSON value in PATH, a regular file of at most MAX_FILE bytes of UTF-8, or UsageError.
    NaN and Infinity (which Python's json would take) are refused: no format has them."""
    name = str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UsageError(f"{name}: no such {what}") from None
    except OSError as exc:
        raise UsageError(f"{name}: cannot open this {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise UsageError(f"{name}: is a folder, not a {what}")
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{name}: not a regular file (a FIFO, socket or device); a {what} must be a file")
        if st.st_size > MAX_FILE:
            raise UsageError(f"{name}: {st.st_size} bytes, too large for a {what} (at most {MAX_FILE})")
        with os.fdopen(os.dup(fd), "rb") as f:
            raw = f.read(st.st_size)
    except OSError as exc:
        raise UsageError(f"{name}: cannot read this {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{name}: not a {what}: byte {exc.start} is not UTF-8 text (a binary file?)") from None

    def no_constant(token: str):
        raise ValueError(f"{token} is not a JSON number")
    try:
        return json.loads(text, parse_constant=no_constant)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{name}: not a {what}: bad JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"{name}: not a {what}: JSON nested too deeply") from None
    except ValueError as exc:     # NaN / Infinity, or an integer of thousands of digits
        raise UsageError(f"{name}: not a {what}: {exc}") from None


def same_file(a: str | os.PathLike, b: str | os.PathLike) -> bool:
    """True if paths A and B name one file (through symlinks, hard links, relative paths)."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return Path(a).resolve() == Path(b).resolve()


__all__ = ["MAX_FILE", "read_json", "same_file"]
