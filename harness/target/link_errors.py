"""What a failed link of `crashcheck build` is missing, said in one line.

Owns reading the linker's output (GNU ld through clang) for the symbols it could not resolve or
found twice, and naming the likely fix: an adapter without its `cc_adapter` table, a C `inline`
function whose only definition is an inline definition (C emits no symbol for it: another
translation unit that calls it finds none), a library not given with --ldflags (named with its
flag when it is one of the system's usual ones: harness/target/system_libs.py), a function of the
structure that clashes with one of crashcheck's. harness/target/build_compile.py calls `reason` when a
link fails and puts it in the one error line; the linker's whole output is printed above it.
"""
from __future__ import annotations

import re
from pathlib import Path

from crashcheck.harness.target import link_check, system_libs

UNDEFINED = re.compile(r"undefined reference to `([^']+)'")
MULTIPLE = re.compile(r"multiple definition of `([^']+)'")
CANNOT_FIND = re.compile(r"cannot find (\S+?):? (?:No such file|$)", re.M)
# "/path/file.o: in function `f':" names the caller of the undefined references after it
IN_FUNCTION = re.compile(r"in function `([^']+)'")
AT_LINE = re.compile(r"(?:^|\s)(/[^:\s]+\.\w+):(\d+): undefined reference")


def _cxx_parts(name: str) -> tuple[str, str] | None:
    """A demangled C++ name the linker printed (`ns::Shape::~Shape()`) as (its unqualified name,
    its class, or ''), or None for a C name."""
    if "(" not in name and "::" not in name:
        return None
    parts = name.split("(", 1)[0].split("::")
    return parts[-1], parts[-2] if len(parts) > 1 else ""


def _cxx_inline_in(files: list[Path], name: str) -> Path | None:
    """The user's C++ source with an out-of-class `inline` definition of NAME (a demangled name):
    C++ emits an inline function only in the translation units that use it."""
    base, cls = _cxx_parts(name)
    qual = (re.escape(cls) + r"\s*::\s*") if cls else ""
    pattern = re.compile(r"\binline\b[^;{}]*?" + qual + re.escape(base) + r"\s*\([^;{}]*\)[^;{}]*\{")
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        if pattern.search(text):
            return f
    return None


def _header_of(src: Path) -> Path | None:
    for suffix in (".hpp", ".hh", ".hxx", ".h"):
        if src.with_suffix(suffix).is_file():
            return src.with_suffix(suffix)
    return None


def _inline_in(files: list[Path], name: str) -> Path | None:
    """The user's file (a source, or a header beside one) with an `inline` definition of NAME."""
    pattern = re.compile(r"\binline\b[^;{}()]*\b" + re.escape(name) + r"\s*\([^;{}]*\)\s*\{")
    seen: set[Path] = set()
    for f in files:
        for cand in [f, *sorted(f.parent.glob("*.h")), *sorted(f.parent.glob("*.hpp"))]:
            if cand in seen or not cand.is_file():
                continue
            seen.add(cand)
            try:
                text = cand.read_text(errors="replace")
            except OSError:
                continue
            for m in pattern.finditer(text):
                if not re.search(r"\b(static|extern)\b", m.group(0)):
                    return cand
    return None


def _callers(out: str, name: str) -> list[str]:
    """Where NAME was referenced from: `function (file:line)`, in the linker's order."""
    where, func = [], None
    for line in out.splitlines():
        m = IN_FUNCTION.search(line)
        if m:
            func = m.group(1)
        if f"undefined reference to `{name}'" in line:
            at = AT_LINE.search(line)
            text = func or "?"
            if at:
                text += f" ({Path(at.group(1)).name}:{at.group(2)})"
            if text not in where:
                where.append(text)
    return where


def reason(out: str, user_files: list[Path], adapter: Path) -> str | None:
    """One line saying what the link of OUT (the linker's messages) lacks, or None if it is no
    unresolved or doubly defined symbol. USER_FILES: the structure's sources and adapter."""
    missing = CANNOT_FIND.search(out)
    if missing:
        lib = missing.group(1)
        if lib.startswith("-l"):
            return (f"the linker cannot find the library {lib[2:]} (`{lib}` in --ldflags): install its "
                    "development package, or say where it is with --ldflags -L<folder>")
        return f"the linker cannot find {lib} (given in --ldflags?)"
    undefined = list(dict.fromkeys(UNDEFINED.findall(out)))
    if "cc_adapter" in undefined:
        return link_check.no_table(adapter)
    if undefined:
        name = undefined[0]
        callers = _callers(out, name)
        called = f" (called from {', '.join(callers[:2])})" if callers else ""
        more = f"; {len(undefined) - 1} more undefined: {', '.join(undefined[1:4])}" if len(undefined) > 1 else ""
        if name.startswith(("__asan_", "__ubsan_", "__tsan_", "__msan_", "__sanitizer_")):
            return (f"undefined reference to `{name}`{called}: the sources were compiled with a sanitizer "
                    "(--cflags -fsanitize=...) and the link was not: give the same flag in --ldflags too")
        if name.startswith("__wrap_"):
            return (f"undefined reference to `{name}`{called}: --ldflags -Wl,--wrap={name[7:]} sends every "
                    f"call of {name[7:]} in the driver, crashcheck's own code included, to {name}, and no "
                    f"source given defines it{more}")
        lib = system_libs.library_of(name) if _cxx_parts(name) is None else None
        if lib is not None:
            title, flag = lib
            return (f"undefined reference to `{name}`{called}: it is in {title}, which the link was not "
                    f"given: add --ldflags {flag}{more}")
        if _cxx_parts(name) is not None:
            inline = _cxx_inline_in(user_files, name)
            if inline is not None:
                header = _header_of(inline)
                where = f"into {header.name}, which every file using it includes" if header else \
                    "into a header every file using it includes"
                return (f"undefined reference to `{name}`{called}: {inline.name} defines it `inline`, and C++ "
                        f"emits an inline function only in the files that use it, so no other file finds one; "
                        f"move the definition {where}, or drop `inline` in {inline.name}{more}")
            return (f"undefined reference to `{name}`{called}: no source given defines it; it must be defined "
                    f"in one of the sources given to crashcheck build (a declared member or destructor "
                    f"needs its body somewhere), or in a library given with --ldflags -l<library>{more}")
        inline = _inline_in(user_files, name)
        if inline is not None:
            return (f"undefined reference to `{name}`{called}: {inline.name} defines it `inline` only, and C "
                    "emits no symbol for an inline definition; declare it `extern` in the source that "
                    f"defines it, so that one emits it (or make it `static inline` in a header){more}")
        return (f"undefined reference to `{name}`{called}: no source given defines it; add the source that "
                f"does, or the library that has it with --ldflags -l<library>{more}")
    doubled = list(dict.fromkeys(MULTIPLE.findall(out)))
    if doubled and doubled[0].startswith(("operator new", "operator delete")):
        # crashcheck's own operator delete forms are weak (trees/common/pm_malloc.c): a second
        # definition is in the user's files, and an operator cannot be renamed
        return (f"`{doubled[0]}` is defined twice in the structure's sources and adapter: a program has "
                "one global operator new and delete; keep one definition and delete the other"
                + (f"; also {', '.join(doubled[1:4])}" if len(doubled) > 1 else ""))
    if doubled:
        return (f"`{doubled[0]}` is defined twice: the structure defines a function or variable of that name "
                "and so does crashcheck's driver or another source (trees/common, the runtime); rename it"
                + (f"; also {', '.join(doubled[1:4])}" if len(doubled) > 1 else ""))
    return None


__all__ = ["reason"]
