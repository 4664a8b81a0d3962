"""The program's calls into a libpmemobj built with the pass (`crashcheck-cc --pmdk`): which call
of the program a library store was made in.

Owns reading the `cc-call NAME` marks the pass logs at each of the program's calls of a
`pmemobj_*` / `pmem_*` function (instrument/pass/CrashcheckPass.cpp, PmdkCall) and naming a store
by the latest such call of its thread before it. Only a store whose own line is in another file
than that call's (the library's) is named so: the program's own stores after the call returned are
its own. Never changes grouping: a bug inside the library is still one bug per library line.
"""
from __future__ import annotations

from bisect import bisect_right

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.triage.records import site_dict

CALL_MARK = b"cc-call "


class Calls:
    """The `cc-call` marks of one trace, per thread, in order."""

    def __init__(self, trace: Trace):
        self.trace = trace
        self.by_tid: dict[int, tuple[list[int], list[tuple[str, int]]]] = {}
        for ev in trace.events:
            if ev.kind == "mark" and bytes(ev.data).startswith(CALL_MARK):
                seqs, calls = self.by_tid.setdefault(ev.tid, ([], []))
                seqs.append(ev.seq)
                calls.append((bytes(ev.data)[len(CALL_MARK):].decode(errors="replace"), ev.site))

    def __bool__(self) -> bool:
        return bool(self.by_tid)

    def of(self, seq: int) -> dict | None:
        """The call store SEQ was made in, {"function", "site"}, or None (the program's own
        store, or no call before it)."""
        ev = self.trace.events[seq]
        seqs, calls = self.by_tid.get(ev.tid, ([], []))
        i = bisect_right(seqs, seq) - 1
        if i < 0:
            return None
        name, site_id = calls[i]
        call_site, own = self.trace.site(site_id), self.trace.site(ev.site)
        if call_site is None or (own is not None and own.file == call_site.file):
            return None
        return {"function": name, "site": site_dict(self.trace, site_id)}


def call_text(call: dict) -> str:
    """`pmemobj_tx_commit at prog.c:77`."""
    site = call.get("site") or {}
    return f"{call['function']} at {site.get('file', '?')}:{site.get('line', 0)}"


def library_calls(record: dict) -> str:
    """The program's calls a record's lost library stores (losing none: the persisted ones it
    needs) were made in, as `pmemobj_tx_commit at prog.c:77, ...` in order of first appearance;
    '' when none was (the lost stores are the program's own)."""
    pieces = record.get("lost") or record.get("persisted") or []
    seen: list[str] = []
    for piece in pieces:
        call = piece.get("call")
        if call and call_text(call) not in seen:
            seen.append(call_text(call))
    return ", ".join(seen)
