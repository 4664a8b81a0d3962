"""crashcheck traces -> pmemcheck store logs (the input of PMDK's pmreorder).

Owns: writing a trace in the text format of Valgrind's pmemcheck `--log-stores=yes` (see
crashsim/pmemcheck_import.py for the format and docs/pmemcheck.md for the mapping), so that
pmreorder can replay it and crashcheck can import it again: import(export(trace)) has the same
stores, flushes, fences and operation markers. Never reads pmemcheck's own output.

The log is one line, `==PID== START|...|STOP`, as pmemcheck writes it with `-q
--print-summary=no` (the options pmreorder's manual gives).

Mapping: every region -> REGISTER_FILE (offset 0) right after START; store -> STORE (stores wider
than 8 bytes split at 8-byte boundaries, as pmemcheck logs a machine word per entry; its site as a
one-frame stack `0x0: func (file:line)`, the inlined-at caller glued on as Valgrind does);
ntstore -> STORE (the format has no NT store); flush -> FLUSH;LINE;SIZE (no fence added after a
clflush: crashcheck's model, unlike pmemcheck, does not take clflush as ordered); fence (any
flavour) -> FENCE; op_begin/op_end -> `op.N.BEGIN` / `op.N.END` (pmreorder takes only markers with
those suffixes; `plain` writes `op_begin N` / `op_end N` as the sample programs emit them); mark ->
its label (with `pmreorder` markers only labels ending in .BEGIN / .END, which pmreorder takes).
Loads, allocs and frees have no pmemcheck entry and are left out.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

from .trace import Trace, TraceError

MAX_STORE = 8


def _frame(trace: Trace, site_id: int, cache: dict[int, str]) -> str:
    """The stack field of a store (with its leading ';'), or '' without a site."""
    text = cache.get(site_id)
    if text is None:
        site = trace.site(site_id)
        text = ""
        if site is not None and (site.file or site.func):
            loc = f"{site.file}:{site.line}" if site.line else f"in {site.file or '?'}"
            text = f";0x0: {site.func or '???'} ({loc})"
            if site.inlined_func or site.inlined_line:
                text += f"0x0: {site.inlined_func or '???'} ({site.inlined_file}:{site.inlined_line})"
        cache[site_id] = text
    return text


def export_log(trace: Trace, out: str | os.PathLike, *, markers: str = "pmreorder",
               file_names: list[str] = ()) -> list[str]:
    """Write TRACE as a pmemcheck store log OUT. Returns notes on what the format could not hold."""
    if markers not in ("pmreorder", "plain"):
        raise ValueError(f"unknown marker style {markers!r}")
    out = Path(out)
    dropped: Counter[str] = Counter()
    notes: list[str] = []
    entries = ["START"]
    for region in trace.regions:
        name = file_names[region.index] if region.index < len(file_names) else str(region.image.resolve())
        if "|" in name or ";" in name:
            raise TraceError(f"region {region.index} file name {name!r} holds '|' or ';', which the "
                             "log format cannot hold")
        entries.append(f"REGISTER_FILE;{name};{region.base:#x};{region.size:#x};0x0")
    bounds = [(r.base, r.base + r.size) for r in trace.regions]
    stacks: dict[int, str] = {}
    open_ops: list[int] = []
    crossed = False
    add = entries.append
    for ev in trace.events:
        kind = ev.kind
        if kind in ("store", "ntstore"):
            if ev.region is None or not any(lo <= ev.addr and ev.end <= hi for lo, hi in bounds):
                dropped["stores outside every region"] += 1
                continue
            if kind == "ntstore":
                dropped["non-temporal stores written as plain STOREs"] += 1
            stack = _frame(trace, ev.site, stacks)
            pos, end, data = ev.addr, ev.end, ev.data
            while pos < end:
                nxt = min(end, pos - pos % MAX_STORE + MAX_STORE) if end - pos > MAX_STORE else end
                value = int.from_bytes(data[pos - ev.addr:nxt - ev.addr], "little")
                add(f"STORE;{pos:#x};{value:#x};{nxt - pos:#x}{stack}")
                pos = nxt
        elif kind == "flush":
            add(f"FLUSH;{ev.addr:#x};{ev.size:#x}")
        elif kind == "fence":
            add("FENCE")
        elif kind in ("op_begin", "op_end"):
            begin = kind == "op_begin"
            if begin:
                open_ops.append(ev.addr)
            elif open_ops and open_ops[-1] == ev.addr:
                open_ops.pop()
            else:
                crossed = True
                if ev.addr in open_ops:
                    open_ops.remove(ev.addr)
            if markers == "pmreorder":
                add(f"op.{ev.addr}.{'BEGIN' if begin else 'END'}")
            else:
                add(f"{kind} {ev.addr}")
        elif kind == "mark":
            label = ev.data.decode("utf-8", "replace")
            if "|" in label or "\n" in label or not label:
                dropped["marks whose label holds '|' or a line break"] += 1
                continue
            if markers == "pmreorder" and not label.endswith((".BEGIN", ".END")):
                dropped["marks left out (pmreorder takes only labels ending in .BEGIN or .END; "
                        "--markers plain keeps them)"] += 1
                continue
            add(label)
        else:
            dropped[f"{kind} events (no pmemcheck entry)"] += 1
    add("STOP")
    # One line, as pmemcheck writes it with -q --print-summary=no (the form pmreorder's manual asks
    # for): pmreorder splits the whole file at '|', so a line break before |STOP, as in a log
    # without -q, would glue the next line's "==PID== " onto the last entry.
    try:
        with open(out, "w") as f:
            f.write(f"=={trace.pid or 0}== " + "|".join(entries) + "\n")
    except OSError as exc:
        raise TraceError(f"{out}: cannot write the log: {exc.strerror}") from None
    for what, n in sorted(dropped.items()):
        notes.append(f"{n} {what}")
    if crossed and markers == "pmreorder":
        notes.append("operations overlap (a multi-threaded trace): pmreorder rejects crossing markers")
    if not trace.complete:
        notes.append("the trace was cut; the log ends where it ends")
    return notes
