"""Which executor a command line asks for: `--jobs N` (this process for 1, local worker processes
for more, harness/run/executors.py) or `--dask ADDRESS` (harness/run/dask_executor.py).

Owns checking a --dask value (local:N or a scheduler's address, and Dask installed) before a run
writes anything, and making the executor. The Dask executor is imported only when --dask is
given, here and nowhere else, so Dask stays an optional dependency (crashcheck[dask]). Never runs
a unit itself.
"""
from __future__ import annotations

import re

from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.run.executors import InProcess, LocalProcesses

LOCAL_DASK = re.compile(r"local:(\d+)$")
DASK_ADDRESS = re.compile(r"(tcp|tls|ucx|inproc)://[^\s/]+:\d+$")


def check_dask(dask: str | None) -> None:
    """Refuse a --dask value that is neither local:N nor a scheduler address, or a machine
    without Dask (one line each), before the run writes anything."""
    if dask is None:
        return
    m = LOCAL_DASK.match(dask)
    if dask.startswith("local") and (m is None or not 1 <= int(m.group(1)) <= 64):
        raise UsageError(f"--dask {dask}: give local:N with N from 1 to 64 worker processes, or a "
                         "scheduler's address such as tcp://HOST:8786")
    if m is None and not DASK_ADDRESS.match(dask):
        raise UsageError(f"--dask {dask}: not a scheduler address; give tcp://HOST:PORT "
                         "(`dask scheduler` prints it) or local:N")
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise UsageError(f"--dask needs Dask distributed, which is not installed ({exc.name or exc}); "
                         "pip install 'crashcheck[dask]'") from None


def from_args(jobs: int, dask: str | None):
    """The executor `--jobs` / `--dask` ask for."""
    if dask is None:
        return LocalProcesses(jobs) if jobs > 1 else InProcess()
    check_dask(dask)
    from crashcheck.harness.run.dask_executor import DaskExecutor      # (only now: Dask is optional)
    m = LOCAL_DASK.match(dask)
    return DaskExecutor(local=int(m.group(1)) if m else None, address=None if m else dask)


__all__ = ["check_dask", "from_args"]
