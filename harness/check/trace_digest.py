"""A bug record's fingerprint of its trace, so that `replay` can tell "fixed" from "ran differently".

Owns the record's `trace_digest` (docs/bug-record.md) and its comparison with a trace replayed
from the record. A record's crash point and crash state are positions in the trace of its
history (or its program's run); a program that seeds rand() from the clock, or reads anything
else that changes from run to run, traces another path when replayed, and "the failure is gone"
would then mean nothing. The fingerprint covers the events up to the crash point in at most
BLOCKS blocks of consecutive events, each with two short digests: `path` (kind, instruction,
size, region, offset and site of every event: what decides the crash points and their pending
stores) and `stored` (the bytes stored, code addresses excepted: they differ from process to
process by design, determinism.py), so a replay names the first block (the first event, for
short traces) where it parted from the recorded run; and a digest of the traced binary (the
driver, the user's program): a run that parts from the recorded one although the binary is the
same is nondeterministic, while one of a rebuilt binary may simply run the changed code (a fix).
Never runs anything; reads traces and the binary's bytes.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Callable

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import determinism

# `crashcheck replay`'s exit status when the replayed run parted from the recorded one
# (0 means fixed: the same run, and the failure gone; 1 reproduced; 2 bad input)
EXIT_NONDETERMINISTIC = 3
UNVERIFIED = ("whether the replay ran as the recorded run did is not verified: the record has no "
              "trace_digest (it was made before records carried one)")
BLOCKS = 256          # digests per record at most: a few kB of JSON for any trace length
DIGEST_BYTES = 4      # per block: a difference goes unseen with odds of 1 in 2^32


def _block_digests(trace: Trace, end: int, size: int) -> tuple[list[str], list[str]]:
    code = {s.id for s in trace.sites if s.code_pointer}
    path, stored = [], []
    for start in range(0, end, size):
        hp = hashlib.blake2b(digest_size=DIGEST_BYTES)
        hs = hashlib.blake2b(digest_size=DIGEST_BYTES)
        for ev in trace.events[start:min(start + size, end)]:
            hp.update(f"{ev.kind}|{ev.sub}|{ev.size}|{ev.region}|{ev.off}|{ev.site};".encode())
            if ev.data and ev.site not in code:
                hs.update(ev.data)
            hs.update(b";")
        path.append(hp.hexdigest())
        stored.append(hs.hexdigest())
    return path, stored


def file_digest(path: str | os.PathLike | None) -> str:
    """A digest of the file at PATH (the traced binary), "" if it cannot be read."""
    if not path:
        return ""
    h = hashlib.blake2b(digest_size=16)
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
    except OSError:
        return ""
    return h.hexdigest()


def fingerprint(trace: Trace, end: int | None = None, binary: str | os.PathLike | None = None) -> dict:
    """The `trace_digest` of TRACE's events before event END (default: all of them), traced by
    the executable BINARY."""
    n = len(trace.events) if end is None else max(0, min(end, len(trace.events)))
    size = max(1, -(-n // BLOCKS))
    path, stored = _block_digests(trace, n, size)
    return {"events": n, "block": size, "path": path, "stored": stored, "binary": file_digest(binary)}


@dataclass(frozen=True)
class Parting:
    """Where a replayed trace first parts from the recorded one."""
    what: str           # "path" (another event) or "stored" (the same events, other bytes)
    first: int          # the first event of the block that differs
    last: int           # its last event (== first when the record kept one digest per event)

    def words(self) -> str:
        where = f"event #{self.first}" if self.first == self.last else f"events #{self.first}-#{self.last}"
        if self.what == "path":
            return f"the replayed run took another path than the recorded one at {where}"
        return f"the replayed run stored other bytes than the recorded one at {where}"


def parting(recorded: dict, trace: Trace) -> Parting | None:
    """None if TRACE's events up to the recorded count fingerprint as RECORDED did; else where
    they first part (a difference of path is reported before one of bytes only)."""
    n, size = int(recorded["events"]), max(1, int(recorded["block"]))
    have = min(n, len(trace.events))
    path, stored = _block_digests(trace, have, size)
    first_stored = None
    for b, (p_rec, s_rec) in enumerate(zip(recorded["path"], recorded["stored"])):
        lo, hi = b * size, min((b + 1) * size, n) - 1
        if b >= len(path) or path[b] != p_rec or (hi >= have):
            return Parting("path", lo, hi)
        if stored[b] != s_rec and first_stored is None:
            first_stored = Parting("stored", lo, hi)
    return first_stored


@dataclass(frozen=True)
class Replayed:
    """A replay's run that parted from the recorded one."""
    parting: Parting
    text: str           # where, in words
    changed: bool       # the binary is not the recorded one: the code changed (a fix?), not proven nondeterministic


def replay_parting(recorded: dict | None, trace: Trace, again: Callable[[], Trace | None],
                   binary: str | os.PathLike | None, stored: bool = True) -> Replayed | None:
    """None if TRACE, a replay's run of BINARY, fingerprints as the RECORDED digest (or the record
    has none; without STORED, bytes are not compared: a libpmemobj pool's random UUID). Else where
    it parted, in words: the replay's event there and, when the binary is the recorded one, from
    AGAIN (one more run of the same replay) where two replays differ, both sides, if they do."""
    if not recorded:
        return None
    p = parting(recorded, trace)
    if p is None or (p.what == "stored" and not stored):
        return None
    text = p.words()
    if p.first < len(trace.events):
        text += f" (there the replay logged {determinism.event_text(trace, trace.events[p.first])})"
    if recorded.get("binary") and file_digest(binary) != recorded["binary"]:
        return Replayed(p, text + "; the binary is not the one the record was made with", True)
    second = again()
    diff = determinism.trace_difference(trace, second, stored) if second is not None else None
    text += (f"; two replays differ too: {diff[1]}" if diff is not None else
             "; two replays since did the same (it may change with the clock, the environment or its input files)")
    return Replayed(p, text, False)


def not_reproduced(text: str, recorded: dict | None, parted: Replayed | None) -> tuple[list[str], int]:
    """The lines and exit status of a replay whose crash state now passes (TEXT says how): 0
    (fixed) when the run was the recorded one, or the code changed since (a note says where the
    run now parts); EXIT_NONDETERMINISTIC when the same binary ran differently (PARTED, from
    replay_parting); 0 with a note when the record has no digest to tell."""
    if parted is not None and not parted.changed:
        return [f"not reproducible: nondeterministic: {parted.text}; the failure did not show in this run, "
                "which is not the recorded one, so it is not known to be fixed"], EXIT_NONDETERMINISTIC
    if parted is not None:
        return [text, f"  (the code changed since the record was made: {parted.text})"], 0
    return [text] + ([] if recorded else [f"  ({UNVERIFIED})"]), 0


__all__ = ["BLOCKS", "EXIT_NONDETERMINISTIC", "Parting", "Replayed", "UNVERIFIED", "file_digest", "fingerprint",
           "not_reproduced", "parting", "replay_parting"]
