"""The run journal: every bug is written down the moment it is found, so nothing found is lost.

Owns one append-only file of JSON lines next to the results file (RESULTS.journal), or in the
bug-record folder when there is no results file. The parent writes a header line when the run
starts; the fuzz loop of every worker process appends one line per new bug (its record as first
seen, before shrinking) and one per finished target. At the normal end, and on SIGINT, SIGTERM or
an internal error, the run turns what it has into the results file and removes the journal. If
the run is killed outright (SIGKILL, power loss), the journal stays, and `crashcheck report
RESULTS.journal -o R.html` (or `crashcheck fuzz` with the same --json, which says so) turns it into
results. Lines are appended with O_APPEND under an flock, so workers never interleave them; a
last line cut by a kill is ignored when reading.
"""
from __future__ import annotations

import fcntl
import json
import os
import stat
import time
from pathlib import Path

FORMAT = 1


def journal_path(json_out: Path | None, bugdir: Path) -> Path:
    return Path(str(json_out) + ".journal") if json_out else bugdir / "run.journal"


class Journal:
    """Appends lines to a journal file (safe to share between processes)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def start(self, header: dict) -> None:
        """Begin a new journal (replacing a stale one of an earlier run)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "w") as f:
            f.write(json.dumps({"crashcheck_journal": FORMAT, **header}) + "\n")

    def keep_stale(self) -> Path | None:
        """If a journal of an earlier, killed run is here, move it aside (PATH.<time>) so this
        run does not overwrite what that one found; returns where it went."""
        if not self.path.exists():
            return None
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(self.path.stat().st_mtime))
        dest = self.path.with_name(f"{self.path.name}.{stamp}")
        try:
            self.path.rename(dest)
        except OSError:
            return None
        return dest

    def append(self, entry: dict) -> None:
        line = (json.dumps(entry) + "\n").encode()
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, line)
        finally:
            os.close(fd)

    def bug(self, record: dict) -> None:
        self.append({"bug": record})

    def target_done(self, structure: str, bug: str | None, stats: dict) -> None:
        self.append({"done": {"structure": structure, "bug": bug, "stats": stats}})

    def remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass


def is_journal(path: str | os.PathLike) -> bool:
    """PATH is a regular file that starts like a journal (its header line)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return False
        with open(path, "rb") as f:
            return f.read(24).startswith(b'{"crashcheck_journal"')
    except OSError:
        return False


def read_journal(path: Path) -> dict:
    """A journal as a results dict (docs/bug-record.md) marked incomplete: the header's settings,
    the bugs found (one per id, the last line winning), the targets that finished. Raises
    ValueError if the file is not a journal."""
    header: dict | None = None
    bugs: dict[str, dict] = {}
    done: list[dict] = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f):
            try:
                entry = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                if raw.endswith(b"\n"):
                    raise ValueError(f"line {n + 1} is not JSON") from None
                break                       # a last line cut by a kill
            if not isinstance(entry, dict):
                raise ValueError(f"line {n + 1} is not a JSON object")
            if n == 0:
                if entry.get("crashcheck_journal") != FORMAT:
                    raise ValueError("not a crashcheck journal (no crashcheck_journal header)")
                header = entry
            elif isinstance(entry.get("bug"), dict) and isinstance(entry["bug"].get("id"), str):
                bugs[entry["bug"]["id"]] = entry["bug"]
            elif isinstance(entry.get("done"), dict):
                done.append(entry["done"])
    if header is None:
        raise ValueError("empty file")
    structures = header.get("structures", [])
    return {"crashcheck": 1, "structures": structures, "model": header.get("model"),
            "strategy": header.get("strategy"), "limit": header.get("limit"), "seed": header.get("seed"),
            "command": header.get("command", ""), "complete": False,
            "interrupted": "killed (results recovered from the journal)",
            "stats": {"histories": sum(d.get("stats", {}).get("histories", 0) for d in done),
                      "crash_points": 0, "states_legal": 0, "states_explored": 0, "states_checked": 0,
                      "elapsed_s": 0.0, "executions_per_s": 0.0, "states_covered_per_s": 0.0, "states_per_s": 0.0},
            "per_structure": [], "bugs": list(bugs.values())}
