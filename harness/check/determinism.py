"""Whether a structure does the same thing twice on the same history.

Owns what "the same" means for crashcheck. Two traced runs of one history must log the same
events: kinds, sites, pool offsets, sizes and the bytes stored (not addresses or process ids,
which differ from run to run by design). Two checks of one history must find the same bugs,
except hangs (whether a slow step counts as a hang depends on the machine's load). Shrinking,
`crashcheck replay`, a record's crash point and the grouping of findings all rely on this, so a
structure that lets the clock, rand(), addresses or uninitialised memory into what it writes or
returns gets a finding of its own (class `nondeterminism`, made by harness/run/search.py and replayed by
harness/cli/cmd_replay.py), never a silently different exploration. Never runs anything itself.
"""
from __future__ import annotations

from crashcheck.crashsim.trace import Event, Trace

CLASS = "nondeterminism"
# Findings whose class or way of ending depends on timing (the machine's load), not on the code.
TIMING_CLASSES = ("operation-hang", "recovery-hang")
TIMING_ENDS = (": timeout", ": stopped")
ADVICE = ("; crashcheck needs the same behaviour for the same history (its crash points, "
          "shrinking and replay depend on it): keep the clock, rand(), addresses and uninitialised "
          "memory out of what the structure writes and returns")


def _event_key(ev: Event, stored: bool = True) -> tuple:
    return (ev.kind, ev.sub, ev.size, ev.data if stored else None, ev.region, ev.off, ev.site)


def _site(trace: Trace, site_id: int) -> str:
    site = trace.site(site_id)
    if site is None:
        return "?"
    return f"{site.file}:{site.line}" + (f" in {site.func}" if site.func else "")


def event_text(trace: Trace, ev: Event) -> str:
    where = f" at +{ev.off:#x}" if ev.off is not None else ""
    size = f" of {ev.size} bytes" if ev.kind in ("store", "ntstore") else ""
    return f"a {ev.kind}{size}{where} by {_site(trace, ev.site)}"


def _hex(data: bytes) -> str:
    return data[:16].hex() + ("..." if len(data) > 16 else "")


def trace_difference(first: Trace, second: Trace, stored: bool = True) -> tuple[str, str] | None:
    """None if two traced runs of one history logged the same events; else (what makes
    differences alike one bug: the kind and source line of the first differing event, what the
    first difference is, in words). Without STORED the bytes stored are not compared: a
    structure that maps its pool through libpmemobj writes the pool's random UUID at creation,
    and every object pointer (PMEMoid) carries part of it, so only where and how much each run
    stored can be the same (Structure.own_pool)."""
    # a code address differs from process to process by design: it is a finding of its own
    # (code-pointer-in-pm), and its bytes are not compared
    code = {s.id for s in first.sites if s.code_pointer}
    for i, (a, b) in enumerate(zip(first.events, second.events)):
        if _event_key(a, stored and a.site not in code) == _event_key(b, stored and b.site not in code):
            continue
        site = first.site(a.site)
        line = f"{site.file}:{site.line}" if site is not None else "?"
        if (a.kind, a.site, a.off, a.size) == (b.kind, b.site, b.off, b.size) and a.data != b.data:
            return (f"{a.kind} at {line}", f"event #{i}, {event_text(first, a)}, stored {_hex(a.data)} in "
                    f"the first run and {_hex(b.data)} in the second")
        return (f"path at {line}", f"event #{i} is {event_text(first, a)} in the first run and "
                f"{event_text(second, b)} in the second")
    if len(first.events) != len(second.events):
        i = min(len(first.events), len(second.events))
        longer, trace = (first, "first") if len(first.events) > i else (second, "second")
        ev = longer.events[i]
        site = longer.site(ev.site)
        return (f"path at {site.file}:{site.line}" if site is not None else "path at ?",
                f"the first run logged {len(first.events)} events, the second {len(second.events)}; "
                f"the {trace} went on with {event_text(longer, ev)}")
    return None


def _timing(cls: str, group: str) -> bool:
    return cls in TIMING_CLASSES or group.endswith(TIMING_ENDS)


def findings_key(findings) -> frozenset[tuple[str, str]]:
    """The (class, group) of every finding of one check that does not depend on timing."""
    return frozenset((f.cls, f.group[1]) for f in findings
                     if f.cls != CLASS and not _timing(f.cls, f.group[1]))


def findings_difference(first: frozenset, second: frozenset) -> tuple[str, str] | None:
    """None if two checks of one history found the same (findings_key); else (the class of the
    first bug found by only one of them, what differed, in words)."""
    only = sorted(first - second) + sorted(second - first)
    if not only:
        return None
    cls, group = only[0]
    which = "first" if (cls, group) in first else "second"
    other = "second" if which == "first" else "first"
    more = f" (and {len(only) - 1} more difference{'s' if len(only) > 2 else ''})" if len(only) > 1 else ""
    return (f"findings: {cls}", f"the {which} check of it found {cls} ({group or 'no site'}), the "
            f"{other} did not{more}")


def describe(how: str) -> str:
    """The detail of a nondeterminism finding whose difference is HOW."""
    return f"the same history, run twice, did not do the same: {how}{ADVICE}"


__all__ = ["ADVICE", "CLASS", "describe", "event_text", "findings_difference", "findings_key", "trace_difference"]
