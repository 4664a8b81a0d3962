"""The leak rule: every PM object allocated in the recovered image must be reachable.

Owns what counts as a leak and when it is known-by-design. The driver reports, after recovery,
the objects the image's allocator marks in use but the structure cannot reach (`unreachable`).
If the structure's own recovery reclaims such objects they are no longer allocated, so whatever
is still listed is a leak. The allocation site of a leaked object comes from the trace: the last
`alloc` event for its address before the crash.

Known-by-design leaks: a structure's expect.json may declare that objects allocated by given
functions can leak when power fails. That covers only the window of the operation in flight: an
object that operation allocates (and has not linked yet) or frees (after unlinking it). So a
leak is expected only if the crash happened during an operation, the object's allocating
function is declared, and the in-flight operation allocates or frees that very object. Anything
else (a leak at a crash between operations, or an object no operation in flight touches, such
as an old node a completed update forgot to free) is a bug.
"""
from __future__ import annotations

from crashsim.trace import Trace


def unreachable(result: dict | None) -> list[tuple[int, int]]:
    """(pool offset, size) of each allocated-but-unreachable object in a driver's check JSON."""
    if not result:
        return []
    return [(int(off), int(size)) for off, size in result.get("unreachable", [])]


def _site_dict(trace: Trace, site_id: int) -> dict | None:
    site = trace.site(site_id)
    if site is None:
        return None
    out = {"file": site.file, "line": site.line, "column": site.column, "func": site.func}
    if site.inlined_func or site.inlined_line:
        out["inlined_at"] = {"file": site.inlined_file, "line": site.inlined_line,
                             "column": site.inlined_column, "func": site.inlined_func}
    return out


def attribute(trace: Trace, objects: list[tuple[int, int]], before_event: int) -> list[dict]:
    """Each leaked object with the site of its last allocation before event BEFORE_EVENT, or,
    if the allocator had marked it in use but its alloc marker came after the crash, the next."""
    sites: dict[int, int] = {}
    later: dict[int, int] = {}
    for i, ev in enumerate(trace.events):
        if ev.region != 0 or ev.kind not in ("alloc", "free"):
            continue
        if i < before_event:
            # A free marker before the crash does not clear the site: the image may still
            # mark the object in use (unlinked, not yet freed durably), and then it is this
            # allocation that leaked.
            if ev.kind == "alloc":
                sites[ev.off] = ev.site
        elif ev.kind == "alloc":
            later.setdefault(ev.off, ev.site)
    out = []
    for off, size in objects:
        sid = sites.get(off, later.get(off))
        out.append({"off": off, "size": size, "site": _site_dict(trace, sid) if sid is not None else None})
    return out


def touched_in_flight(trace: Trace, crash_event: int) -> set[int]:
    """Pool offsets the operation in flight at CRASH_EVENT allocates or frees (its whole span,
    also after the crash: what it would have done had power not failed). Empty between ops."""
    events = trace.events
    begin = None
    for i in range(min(crash_event, len(events)) - 1, -1, -1):
        kind = events[i].kind
        if kind == "op_end":
            return set()
        if kind == "op_begin":
            begin = i
            break
    if begin is None:
        return set()
    out = set()
    for ev in events[begin + 1:]:
        if ev.kind == "op_end":
            break
        if ev.kind in ("alloc", "free") and ev.region == 0:
            out.add(ev.off)
    return out


def expected(known: list[dict], objects: list[dict], in_flight: set[int] | None = None) -> dict | None:
    """The expect.json entry covering every leaked object, or None (see the module note).
    IN_FLIGHT: offsets the operation in flight allocates or frees (touched_in_flight)."""
    leaks = [k for k in known if k.get("class") == "leak"]
    if not leaks or not objects:
        return None
    match = None
    for obj in objects:
        if in_flight is not None and obj["off"] not in in_flight:
            return None
        site = obj.get("site") or {}
        funcs = {site.get("func"), (site.get("inlined_at") or {}).get("func")}
        hit = next((k for k in leaks if k.get("alloc_func") in funcs), None)
        if hit is None:
            return None
        match = match or hit
    return match


def describe(objects: list[dict]) -> str:
    first = objects[0]
    site = first.get("site")
    where = f" allocated at {site['file']}:{site['line']} in {site['func']}" if site else ""
    more = f" (and {len(objects) - 1} more)" if len(objects) > 1 else ""
    return f"{first['size']}-byte object at +{first['off']:#x}{where} is allocated but unreachable after recovery{more}"
