"""Processes a command's code under test left behind: found and killed when the command ends.

Owns the run token. A supervised run is killed as a process group after it ends
(harness/core/supervise.py), but a daemon the code under test starts with setsid() leaves the
group and the session, and would outlive crashcheck (a user's program or checker that forks a
server, a recovery that respawns itself). Every process started while a command runs inherits
CRASHCHECK_RUN_TOKEN, unique to that command, through the environment; at the command's end each
process still carrying it is SIGKILLed. Environment variables survive setsid, double forks and
exec; a process that clears its own environment is not found (nothing else names it). Reading
/proc/*/environ once per command costs a few milliseconds."""
from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from pathlib import Path

TOKEN = "CRASHCHECK_RUN_TOKEN"


@contextlib.contextmanager
def collected():
    """The command's body: its descendants get a fresh token; those left at the end are killed."""
    before = os.environ.get(TOKEN)
    token = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
    os.environ[TOKEN] = token
    try:
        yield token
    finally:
        if before is None:
            os.environ.pop(TOKEN, None)
        else:
            os.environ[TOKEN] = before
        kill(token)


def carrying(token: str) -> list[int]:
    """Processes (other than this one) whose environment holds TOKEN."""
    want = f"{TOKEN}={token}".encode()
    me = os.getpid()
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == me:
            continue
        try:
            env = (proc / "environ").read_bytes()
        except OSError:          # gone, or not ours to read
            continue
        if any(v == want for v in env.split(b"\0")):
            found.append(int(proc.name))
    return found


def kill(token: str, settle_s: float = 0.5) -> int:
    """SIGKILL every process carrying TOKEN (again while new ones appear, up to SETTLE_S: a
    daemon may fork as it dies); how many there were."""
    killed: set[int] = set()
    deadline = time.monotonic() + settle_s
    while True:
        pids = [p for p in carrying(token) if p not in killed]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        if not pids or time.monotonic() > deadline:
            return len(killed)
