"""Work folders: where a checker keeps its pool, traces and post-crash images.

Owns choosing the scratch place ($CRASHCHECK_WORKDIR, else /dev/shm, else the system's temporary
folder), checking it before a run starts (a folder that is missing, a file, read-only or too small
is a set-up error with one line, never a bug of the structure nor a bus error later), noticing
that it filled up during a run, and removing the folders that runs killed before they could clean
up. A checker's folder is named crashcheck-<pid>-<random>, so the next run can tell the folders
of dead processes from those of runs still going.
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from crashcheck.harness.core.errors import SetupError

PREFIX = "crashcheck-"
_OWNED = re.compile(r"crashcheck-(\d+)-[A-Za-z0-9_]+$")
# Room a checker needs besides the pool itself: traces, the history, recovery traces.
EXTRA_ROOM = 16 << 20


def scratch_root() -> Path:
    """$CRASHCHECK_WORKDIR (created if missing), else /dev/shm when it is a writable tmpfs (the
    traced run writes its trace faster into memory than through a disk's page cache), else the
    system's temporary folder."""
    env = os.environ.get("CRASHCHECK_WORKDIR")
    if env:
        path = Path(env)
        if path.exists() and not path.is_dir():
            raise SetupError(f"work folder {path} ($CRASHCHECK_WORKDIR) is a file, not a folder; "
                             "point CRASHCHECK_WORKDIR at a folder")
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SetupError(f"cannot create the work folder {path} ($CRASHCHECK_WORKDIR): "
                             f"{exc.strerror}") from None
        return path
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK | os.X_OK):
        return shm
    return Path(tempfile.gettempdir())


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def check_room(root: Path, pool_size: int) -> None:
    """Refuse a work folder that cannot hold one checker's files (pool, images, traces)."""
    need = 3 * pool_size + EXTRA_ROOM
    try:
        have = free_bytes(root)
    except OSError as exc:
        raise SetupError(f"cannot inspect the work folder {root}: {exc.strerror}") from None
    if have < need:
        raise SetupError(f"work folder {root} has {have >> 20} MiB free, a checker needs at least "
                         f"{need >> 20} MiB (pool of {pool_size >> 20} MiB); free some space or set "
                         "CRASHCHECK_WORKDIR to a larger folder")


def make_workdir(pool_size: int) -> tempfile.TemporaryDirectory:
    """A fresh folder for one checker, in a checked scratch place."""
    root = scratch_root()
    check_room(root, pool_size)
    try:
        return tempfile.TemporaryDirectory(prefix=f"{PREFIX}{os.getpid()}-", dir=root)
    except OSError as exc:
        raise SetupError(f"cannot create a folder in the work folder {root}: {exc.strerror}; "
                         "make it writable or set CRASHCHECK_WORKDIR to another folder") from None


def nearly_full(path: Path, pool_size: int) -> bool:
    """The folder holding PATH has less room than one more pool: a cut trace or a failed write
    there is the disk's fault, not the structure's."""
    try:
        return free_bytes(path) < pool_size + (1 << 20)
    except OSError:
        return False


def full_error(path: Path) -> SetupError:
    return SetupError(f"the work folder {path} is full; free some space or set CRASHCHECK_WORKDIR "
                      "to a larger folder")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(root: Path | None = None) -> int:
    """Remove the work folders of crashcheck processes that no longer exist (killed runs);
    returns how many. Folders of live processes, and anything not named like ours, stay."""
    try:
        root = root or scratch_root()
        entries = list(root.iterdir())
    except (OSError, SetupError):
        return 0
    removed = 0
    for entry in entries:
        m = _OWNED.match(entry.name)
        if not m or not entry.is_dir() or entry.is_symlink():
            continue
        pid = int(m[1])
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            if entry.stat().st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed += 1
    return removed
