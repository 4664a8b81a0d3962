"""Output paths of a run, checked before the run starts.

Owns the rule that a run never ends by failing to write what it found: the results file, the
report and the bug-record folder must be writable (their folder exists or can be created, and is
writable), must not be folders where a file goes (or a file where a folder goes), and must not
be the same file (`--json X --report X` would overwrite the results with the report). Each
problem is one line and exit 2, before any work is done.
"""
from __future__ import annotations

import os
from pathlib import Path

from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.core.user_files import same_file


def _writable_folder(path: Path, what: str) -> None:
    """PATH's folder exists (or its nearest existing ancestor can hold it) and is writable."""
    folder = path.parent
    probe = folder
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if not probe.is_dir():
        raise UsageError(f"{what} {path}: {probe} is not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise UsageError(f"{what} {path}: cannot write into {probe} (permission denied)")


def check_file_output(path: Path, what: str) -> None:
    if path.is_dir():
        raise UsageError(f"{what} {path} is a folder; give a file name")
    if path.exists() and not os.access(path, os.W_OK) and not os.access(path.parent, os.W_OK):
        raise UsageError(f"{what} {path}: permission denied")
    _writable_folder(path, what)


def check_outputs(json_out: Path | None, report: Path | None, bugdir: Path) -> None:
    """Every output of a fuzz run, before it starts (see the module note)."""
    if json_out is not None:
        check_file_output(json_out, "results file")
    if report is not None:
        check_file_output(report, "report")
    if json_out is not None and report is not None and same_file(json_out, report):
        raise UsageError(f"--json and --report both name {json_out}; the report would overwrite the "
                         "results: give two different files")
    if bugdir.exists() and not bugdir.is_dir():
        raise UsageError(f"bug-record folder {bugdir} is a file; give a folder (--bugdir)")
    if bugdir.is_dir():
        if not os.access(bugdir, os.W_OK | os.X_OK):
            raise UsageError(f"bug-record folder {bugdir}: cannot write into it (permission denied)")
    else:
        _writable_folder(bugdir / "x", "bug-record folder")
