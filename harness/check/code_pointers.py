"""Code addresses stored in PM: one finding of their own, found in the traced run.

Owns the class `code-pointer-in-pm`. The pass flags the site of every store of a code address (a
constructor writing an object's vtable pointer, a function pointer: docs/trace-format.md flag
bit 1), and the trace holds only stores to PM; so a flagged store in a history's trace is a code
address in PM. Such an address belongs to one process: after a restart the program is mapped
elsewhere (a position-independent executable, ASLR), and a recovery that calls through it jumps
to garbage. Every crash state after that store would end in a recovery crash (or behave
differently from run to run), none of them saying why; so the history gets this one finding,
naming the stores, and its crash states are not checked. Never runs anything.
"""
from __future__ import annotations

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.findings import Finding

CLASS = "code-pointer-in-pm"


def code_pointer_stores(trace: Trace) -> list[int]:
    """The events (their indexes) of TRACE that store a code address into PM."""
    flagged = {s.id for s in trace.sites if s.code_pointer}
    if not flagged:
        return []
    return [ev.seq for ev in trace.events if ev.kind in ("store", "ntstore") and ev.site in flagged]


def code_pointer_findings(trace: Trace | None) -> list[Finding]:
    """One finding if TRACE stores a code address into PM, else none."""
    if trace is None:
        return []
    seqs = code_pointer_stores(trace)
    if not seqs:
        return []
    where: list[str] = []
    for seq in seqs:
        site = trace.site(trace.events[seq].site)
        text = site.describe() if site is not None else "?"
        if text not in where:
            where.append(text)
    more = f" (and {len(where) - 1} more site{'s' if len(where) > 2 else ''})" if len(where) > 1 else ""
    f = Finding(CLASS, f"a code address (a vtable or function pointer) stored in PM at {where[0]}{more}, "
                f"invalid after a restart: the next process maps the program's code elsewhere, so a "
                f"recovery that calls through it jumps to garbage ({len(seqs)} such store"
                f"{'s' if len(seqs) != 1 else ''} in this history; its crash states were not checked)",
                (CLASS, "code address in PM"))
    f.stores = seqs
    return [f]


__all__ = ["CLASS", "code_pointer_findings", "code_pointer_stores"]
