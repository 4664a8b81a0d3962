"""The lanes of a threaded run: each operation's interval and each scheduler switch, on one axis.

Owns turning a threaded run (harness/check/threads.py) into the bug record's `lanes` and `preemptions`
(docs/bug-record.md), which the report draws one lane per thread (harness/render/lanes_svg.py).

The axis is the trace's event index. An operation spans its `op_begin` event to its `op_end` event
(the driver emits them on the operation's own thread right inside its `!call` / `!ret` lines); a
switch sits at its `cc-sched switch` mark (docs/scheduler.md "Trace marks"); a crash point "before
event E" sits at E. So intervals, switches and the crash compare directly, which the order of the
`!call` / `!ret` lines alone could not do (switches and crash points are trace positions). An
operation that began and never ended (a deadlock, a run cut short) has no return position.

Thread numbers: the driver starts section k's thread k-th, so the trace's thread ids are the
history's thread numbers (0: the main thread, which runs the load phase).

Never judges and never draws.
"""
from __future__ import annotations

import re

from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check.threads import op_events
from crashcheck.specs.model import Model

SWITCH = re.compile(r"cc-sched switch step=(\d+) from=(\d+) to=(\d+)(?: at=(\S+))?")


def lanes(model: Model, ops, lines: list[str], trace: Trace) -> list[dict]:
    """One entry per operation of the threaded part of OPS that began in TRACE, in order of call:
    thread, op (index in the history), text, result (the `!ret` line's output; None if it never
    returned), call and ret (event indices; ret None if it never ended)."""
    begin, end = op_events(trace)
    results: dict[int, str] = {}
    for x in lines:
        if x.startswith("!ret "):
            parts = x.split(" ", 3)
            results[int(parts[2])] = parts[3] if len(parts) > 3 else ""
    out = []
    for i in range(ops.load, len(ops)):
        if i not in begin:
            continue           # never called: nothing to draw
        out.append({"thread": ops.thread_of[i], "op": i, "text": model.op_text(ops[i]),
                    "result": results.get(i), "call": begin[i], "ret": end.get(i)})
    return sorted(out, key=lambda e: (e["call"], e["op"]))


def preemptions(trace: Trace) -> list[dict]:
    """Every switch of the scheduler in TRACE, in order: step, from and to (thread numbers), at
    (the mark's event index), site (where `from` was switched away: the access, atomic or
    operation boundary's source site, or None) and where (that site as file:line, the line that
    called it for a site in an inlined helper; without a site the interposed call's name the mark
    gives, e.g. `pthread_mutex_lock`)."""
    out = []
    for i, ev in enumerate(trace.events):
        if ev.kind != "mark" or not ev.data.startswith(b"cc-sched switch "):
            continue
        m = SWITCH.fullmatch(ev.data.decode("utf-8", "replace"))
        if m is None:
            continue
        site = trace.site(ev.site)
        if site is not None and site.inlined_line:
            # inside an inlined helper (persist.h's fence): the structure's line that called it
            where = f"{site.inlined_file}:{site.inlined_line}"
        elif site is not None:
            where = f"{site.file}:{site.line}" if site.line else (site.file or "?")
        else:
            where = m.group(4) or "unknown"
        out.append({"step": int(m.group(1)), "from": int(m.group(2)), "to": int(m.group(3)), "at": i,
                    "site": site.as_dict() if site is not None else None, "where": where})
    return out


__all__ = ["lanes", "preemptions"]
