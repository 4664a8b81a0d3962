"""The calls that led into a libpmemobj built with the pass (`crashcheck-cc --pmdk`, `crashcheck
build --pmdk`): which call of the program a library store was made in, and through which of the
library's calls.

Owns reading the two kinds of marks the pass and runtime log and naming a store by them:
- `cc-stack ID ID ...` (instrument/runtime/rt_callstack.c): the thread's shadow call stack, site
  ids of call sites outermost first (the program's call of `pmemobj_*` / `pmem_*`, then each
  library call down to the function that stored), logged before a store, flush or fence whenever
  it changed; no ids once the program has its control back. A store is named by the latest one of
  its thread: `call` is the bottom frame, `stack` every frame.
- `cc-call NAME` (instrument/pass/CrashcheckPass.cpp, PmdkCall), logged right after each of the
  program's calls of the library: traces without `cc-stack` marks (made by an older pass) name a
  store by the latest one of its thread.
Only a store whose own line is in another file than the program's call (the library's) is named
so: the program's own stores are its own. Never changes grouping: a bug inside the library is
still one bug per library line, whatever calls led there.
"""
from __future__ import annotations

from bisect import bisect_right

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.triage.records import site_dict

CALL_MARK = b"cc-call "
STACK_MARK = b"cc-stack"


class Calls:
    """The `cc-stack` marks of one trace (or, without any, its `cc-call` marks), per thread, in
    order: (event index, site ids outermost first, the bottom call's function name or None)."""

    def __init__(self, trace: Trace):
        self.trace = trace
        stacks: dict[int, tuple[list[int], list[tuple[list[int], str | None]]]] = {}
        calls: dict[int, tuple[list[int], list[tuple[list[int], str | None]]]] = {}
        for ev in trace.events:
            if ev.kind != "mark":
                continue
            data = bytes(ev.data)
            if data == STACK_MARK or data.startswith(STACK_MARK + b" "):
                ids = [int(x) for x in data[len(STACK_MARK):].split() if x.isdigit()]
                seqs, frames = stacks.setdefault(ev.tid, ([], []))
                seqs.append(ev.seq)
                frames.append((ids, None))
            elif data.startswith(CALL_MARK):
                seqs, frames = calls.setdefault(ev.tid, ([], []))
                seqs.append(ev.seq)
                frames.append(([ev.site], data[len(CALL_MARK):].decode(errors="replace")))
        self.by_tid = stacks or calls

    def __bool__(self) -> bool:
        return bool(self.by_tid)

    def of(self, seq: int) -> dict | None:
        """The call store SEQ was made in, {"function", "site", "stack"} (`stack`: every frame's
        site, outermost first, with `cc-stack` marks only), or None (the program's own store, or
        no call before it)."""
        ev = self.trace.events[seq]
        seqs, frames = self.by_tid.get(ev.tid, ([], []))
        i = bisect_right(seqs, seq) - 1
        if i < 0 or not frames[i][0]:
            return None
        ids, name = frames[i]
        call_site, own = self.trace.site(ids[0]), self.trace.site(ev.site)
        if call_site is None or (own is not None and own.file == call_site.file):
            return None
        out = {"function": name or callee(call_site.chain), "site": site_dict(self.trace, ids[0])}
        if name is None:
            out["stack"] = [site_dict(self.trace, k) for k in ids]
        return out


def callee(chain) -> str:
    """The function a call site calls, from its chain (`pmemobj_tx_commit()`; `an indirect call`)."""
    first = chain[0] if chain else "?"
    return first[:-2] if first.endswith("()") else first


def call_text(call: dict) -> str:
    """`pmemobj_tx_commit at prog.c:77`."""
    site = call.get("site") or {}
    return f"{call['function']} at {site.get('file', '?')}:{site.get('line', 0)}"


def stack_text(call: dict) -> str:
    """The whole stack of CALL, outermost first: `pmemobj_tx_commit at prog.c:77 > tx_post_commit
    at tx.c:512 > operation_process at memops.c:630`; its call alone without a stack. A call
    through a pointer is named by the function the next frame's line is in (`block_write_header
    (through a pointer) at palloc.c:124`: the callee, or a function inlined into it), the last one
    `an indirect call`."""
    frames = [f or {} for f in call.get("stack") or []]
    if not frames:
        return call_text(call)
    names = [callee(f.get("via")) for f in frames]
    for i, name in enumerate(names[:-1]):
        if name == "an indirect call" and frames[i + 1].get("func"):
            names[i] = f"{frames[i + 1]['func']} (through a pointer)"
    return " > ".join(f"{name} at {f.get('file', '?')}:{f.get('line', 0)}" for name, f in zip(names, frames))


SHOWN = 3        # stacks a summary line names; the record keeps every store's


def library_calls(record: dict) -> str:
    """The calls a record's lost library stores (losing none: the persisted ones it needs) were
    made in, each as its stack (stack_text), `; `-separated in order of first appearance, the
    first SHOWN of them and how many more; '' when none was (the lost stores are the program's
    own)."""
    pieces = record.get("lost") or record.get("persisted") or []
    seen: list[str] = []
    for piece in pieces:
        call = piece.get("call")
        if call and stack_text(call) not in seen:
            seen.append(stack_text(call))
    more = f" (and {len(seen) - SHOWN} more: the record's `call` of each store)" if len(seen) > SHOWN else ""
    return "; ".join(seen[:SHOWN]) + more


def name_calls(trace: Trace, pieces: list[dict]) -> None:
    """Give each of PIECES (lost or persisted stores of a record, with `seq`) made inside the
    library its `call`."""
    calls = Calls(trace)
    if not calls:
        return
    for piece in pieces:
        call = calls.of(piece["seq"])
        if call is not None:
            piece["call"] = call
