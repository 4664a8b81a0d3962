"""A fix in words: the C statement an edit adds and the edit in a sentence, for people.

Owns guessing, from a source line's text, the address it stores to, and writing each edit of
harness/check/fix_edits.py as a statement (x86 intrinsics; a structure's own persist helper does the
same) and as words. Never proves anything.
"""
from __future__ import annotations

import re

from crashcheck.crashsim.trace import Trace
from crashcheck.crashsim.trace_edit import TraceEdit
from crashcheck.harness.check.fix_edits import Edit, flush_objects, published, trace_keys
from crashcheck.harness.core.paths import source


_CALL = re.compile(r"^\s*(?:return\s+)?(?!(?:if|while|for|switch|sizeof)\b)[A-Za-z_][\w.>-]*\s*\(")
_LABEL = re.compile(r"^\s*(?:case\s+[^:]+|default|[A-Za-z_]\w*)\s*:(?!:)\s*")
_CAST = re.compile(r"^\(\s*(?:const\s+|struct\s+|unsigned\s+)*[A-Za-z_]\w*\s*\**\s*\)")
_ASSIGN = re.compile(r"^\s*(?:[\w\s\*]+\s+)?([\w\[\]\.\->\*\s]+?)\s*(?:[-+*/|&^]?=)(?!=)")


def _source_line(key: str) -> str:
    file, _, line = key.rpartition(":")
    try:
        return source(file).read_text(errors="replace").splitlines()[int(line) - 1]
    except (OSError, ValueError, IndexError):
        return ""


def _first_argument(text: str, start: int) -> str:
    """The first argument of the call whose '(' is at START in TEXT, casts taken off."""
    depth, i = 0, start
    while i < len(text):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            break
        i += 1
    arg = text[start + 1:i].strip()
    return _CAST.sub("", arg).strip()


def address_of(text: str) -> str:
    """The address a source line stores to, guessed from its text: the first argument of a call
    statement (`store8(slot, ref)`, also after a `case X:` label, casts taken off), or `&` the left
    side of an assignment; ADDR when neither."""
    body = _LABEL.sub("", text)
    m = _ASSIGN.match(body)
    lhs = body[:m.end()].rstrip("=+-*/|&^ \t").strip() if m else ""
    if lhs and "(" not in lhs:
        if lhs.startswith("*"):                     # a store through a pointer: the pointer
            return lhs.lstrip("*").strip()
        if re.match(r"^[\w\s]+[\s*]+\**[A-Za-z_]\w*$", lhs) and not re.match(r"^[A-Za-z_]\w*$", lhs):
            # a pointer declared and set from a call: what it points to is what was stored
            return lhs.replace("*", " ").split()[-1]
        return f"&{lhs}"
    m = _CALL.search(body)
    if m:
        return _first_argument(body, m.end() - 1) or "ADDR"
    return "ADDR"


def _object_size(trace: Trace | None, e: Edit) -> str:
    """The size of the object a flush-object edit flushes at its first execution in TRACE."""
    if trace is None:
        return "SIZE"
    edit = TraceEdit()
    flush_objects(trace, trace_keys(trace), e, edit)
    for i in sorted(edit.before):
        lines = edit.before[i]
        return str(len(lines) * trace.line_size)
    return "SIZE"


def _published_size(trace: Trace | None, e: Edit) -> tuple[str, bool]:
    """How much of the object a persist-object-before publishes it flushes at its first execution
    in TRACE (from its start to the end of its last line not yet flushed: a chunk whose zeroes are
    durable needs its header only), and whether new objects it points to are flushed too."""
    if trace is None:
        return "SIZE", False
    keys = trace_keys(trace)
    at = next((i for i, k in enumerate(keys) if k == e.anchor and trace.events[i].kind in ("store", "ntstore")), None)
    objs, lines = published(trace, {at}).get(at, ([], [])) if at is not None else ([], [])
    if not objs:
        return "SIZE", False
    a, n, _ = objs[0]
    own = [line for line in lines if a - a % trace.line_size <= line < a + n]
    return str(min(n, max(own) + trace.line_size - a) if own else n), len(objs) > 1


def value_of(text: str) -> str:
    """What a source line stores, guessed from its text: the right side of its assignment
    (`*ref = nu;` -> nu), else its last call argument; VALUE when neither."""
    body = _LABEL.sub("", text)
    m = _ASSIGN.match(body)
    if m and "(" not in body[:m.end()]:
        return _CAST.sub("", body[m.end():].strip().rstrip(";").strip()).strip() or "VALUE"
    m = _CALL.search(body)
    if m:
        args = body[m.end():].rsplit(")", 1)[0]
        return _CAST.sub("", args.split(",")[-1].strip()).strip() or "VALUE"
    return "VALUE"


def statement(trace: Trace | None, e: Edit) -> str:
    """The C statement(s) the edit adds, for people (x86 intrinsics; the structure's own persist
    helper does the same)."""
    addr = address_of(_source_line(e.anchor))
    if e.kind == "flush-after":
        return f"_mm_clwb({addr});"
    if e.kind == "fence-after" or e.kind == "fence-before":
        return "_mm_sfence();"
    if e.kind == "persist-after":
        return f"_mm_clwb({addr}); _mm_sfence();"
    if e.kind == "persist-before":
        return f"_mm_clwb({address_of(_source_line(e.other))}); _mm_sfence();"
    if e.kind == "flush-object":
        size = _object_size(trace, e)
        obj = address_of(_source_line(e.anchor))
        return (f"for (size_t o = 0; o < {size}; o += {trace.line_size if trace else 64}) "
                f"_mm_clwb((char *){obj} + o);  /* the whole object, not one line */")
    if e.kind == "persist-object-before":
        obj = value_of(_source_line(e.anchor))
        size, children = _published_size(trace, e)
        return (f"for (size_t o = 0; o < {size}; o += {trace.line_size if trace else 64}) "
                f"_mm_clwb((char *){obj} + o);{'  /* and the new objects it points to */' if children else ''} "
                f"_mm_sfence();  /* the new object persisted before the store publishes it */")
    if e.kind == "move-fence":
        return f"{_source_line(e.other).strip() or '_mm_sfence();'}  /* moved from {e.other} */"
    return (f"/* persist what this store publishes */ _mm_sfence();  ...  "
            f"_mm_clwb({addr}); _mm_sfence();")


def describe(edits: tuple[Edit, ...]) -> str:
    """The edits in words: `add a flush after wort.c:81`."""
    words = {"flush-after": "add a flush of the stored line after", "fence-after": "add a fence after",
             "persist-after": "add a flush and a fence after", "flush-after call": "add a flush of the "
             "lines it stored after the call at", "persist-after call": "add a flush of the lines it stored "
             "and a fence after the call at", "fence-before": "add a fence before",
             "persist-before": "add a flush of {other} and a fence before",
             "move-fence": "move the fence of {other} before",
             "flush-object": "flush every line of the new object ({other} stores into it) before the fence at",
             "persist-object-before": "persist the new object allocated at {other} (each line written and not "
             "yet flushed) before the store at",
             "commit": "persist what is written before it, then it (a commit), at"}
    return "; ".join(f"{words[e.kind + (' call' if e.other == 'call' else '')].format(other=e.other)} {e.anchor}"
                     for e in edits)


__all__ = ["address_of", "describe", "statement", "value_of"]
