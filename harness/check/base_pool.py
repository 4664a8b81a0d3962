"""The pool every traced history of a structure on an instrumented libpmemobj starts from.

Owns making that pool and keeping it. A structure built with `crashcheck build --pmdk` maps its
pool through a libpmemobj compiled with the pass, so the library's own stores are traced; if each
history created its pool (`driver run --create`), `pmemobj_create` would be traced too: crash
points before the pool header is whole (recovery fails with "invalid major version": PMDK's
bug-free behaviour, not the structure's) and a random pool UUID and creation time in every trace.
So the pool is made once per driver binary and pool size, untraced (`driver run --create` on an
empty history, the adapter's create_file, then close), as `crashcheck run --setup` makes a
program's pool; each history opens a copy of it (pmemobj_open, traced, with its crash points).

The pool is kept beside the driver, named by the driver's identity (size and mtime) and the
pool size: every run and every `crashcheck replay` of that build opens the same bytes (the same
UUID inside every PMEMoid the structure stores), so its traces are the same from run to run and
records replay. Workers racing to make it keep the first one made (a hard link never replaces).
A rebuilt driver makes a new pool and the old build's are removed. Where the build folder is not
writable the pool lives in the session's work folder (one per session: replays then see another
UUID and may say the run parted from the recorded one).
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

from crashcheck.harness.core.errors import SetupError
from crashcheck.harness.core.supervise import run_supervised
from crashcheck.harness.check.session import clean_env

CREATE_TIMEOUT_S = 120.0      # pmemobj_create of a 64 MiB pool takes well under a second


def wanted(session) -> bool:
    """Whether SESSION's histories start from a pool made once (a --pmdk build's structure)."""
    return session.structure.pmdk_library


def copy_to(session, dest: Path) -> None:
    """DEST becomes a fresh copy of SESSION's base pool (made first if need be)."""
    shutil.copyfile(base_pool(session), dest)


def base_pool(session) -> Path:
    """The untraced pool of SESSION's driver and pool size, made when missing."""
    driver, size = Path(session.driver), session.settings.pool_size
    st = driver.stat()
    stem, build = f".{driver.name}.pool-", f"-{st.st_size:x}-{st.st_mtime_ns:x}"
    name = f"{stem}{size}{build}"
    for folder in (driver.parent, session.workdir):
        path = folder / name
        if path.exists():
            return path
        if os.access(folder, os.W_OK):
            break
    made = _make(session, path.with_name(f"{name}.{os.getpid()}.tmp"), size)
    try:
        os.link(made, path)            # first made wins: a racing worker's pool is dropped
    except FileExistsError:
        pass
    except OSError:
        os.replace(made, path)         # a file system without hard links: the last made wins
    finally:
        made.unlink(missing_ok=True)
    for old in path.parent.glob(f"{stem}*"):
        if not old.name.endswith((build, ".tmp")):
            old.unlink(missing_ok=True)  # a previous build's pool (other sizes of this one stay)
    return path


def _make(session, pool: Path, size: int) -> Path:
    """POOL made by the driver's create_file, untraced; SetupError with its last words if not."""
    pool.unlink(missing_ok=True)
    results = session.workdir / "base-pool.results"
    argv = [str(session.driver), "run", "--pool", str(pool), "--create", "--size", str(size),
            "--results", str(results), os.devnull]
    end = run_supervised(argv, env=clean_env(), output=session.workdir / "base-pool.output",
                         timeout_s=CREATE_TIMEOUT_S)
    try:
        ended = any(x.startswith("!end ") for x in results.read_text().splitlines())
    except OSError:
        ended = False
    if end.status != "ok" or not ended or not pool.exists():
        said = [x for x in end.output.strip().splitlines() if x.strip()]
        pool.unlink(missing_ok=True)
        raise SetupError(f"the pool of {session.structure.name} could not be made ({end.how()}): "
                         f"{said[-1][:300] if said else 'no message'}")
    return pool


__all__ = ["base_pool", "copy_to", "wanted"]
