"""Compiling a user's structure into drivers: languages, flags, objects, links, diagnostics.

Owns the compiler commands of `crashcheck build` (harness/cli/cmd_build.py owns its command line and
what it registers). Each source is compiled by its language: `.c` as C (-std=gnu11) and `.cc`
`.cpp` `.cxx` `.c++` `.C` as C++ (-std=gnu++20), with crashcheck-cc / crashcheck-c++ for the
traced drivers and, for the native one, the clang the pass was built for (harness/target/toolchain.py); a driver with any C++ source is
linked by the C++ compiler. trees/common (driver, pool, allocator) is compiled once per flavour
(traced, native) and linked into every variant; the structure's sources and the adapter are
compiled per variant, with the seeded bug's -D define. The user's --cflags reach the structure's
sources and the adapter only, never trees/common: a hook forced in for the structure (`-include
hook.h` sending malloc to the pool) would otherwise rewrite crashcheck's own allocator and driver,
and a -D or -O meant for the structure would change them. trees/common gets crashcheck's flags
and --common-cflags only. (--ldflags cannot be split so: the link is one.) With `pm_malloc`, the structure's sources
(not the adapter, not trees/common) get `-include pm_malloc.h`, which sends malloc and its
relatives to the pool (trees/common/pm_malloc.h), and the pass sends every allocation call
whose first frame in the user's code is one of the structure's files (its sources and the headers
given with them, which a header-only structure's code is compiled from inside the adapter) to the
pool: malloc and its relatives, memalign, valloc, pvalloc, C++ new/new[] and their deletes
(CRASHCHECK_PASS_PM_MALLOC; the untraced driver runs the pass for that alone,
CRASHCHECK_PASS_ALLOC_ONLY). The adapter's own calls and the standard library's internals called
from the adapter stay the C library's, but the adapter gets `-include pm_free.h`: its free and
realloc of a pool object (a scan's result the structure allocated) go to the pool.

With `pmdk` (crashcheck build --pmdk, instrument/build-pmdk's output), the traced compiles of the
structure's sources and adapter and the traced links get crashcheck-cc's --pmdk (its headers,
its static libpmem and libpmemobj); trees/common and the native driver do not.

A compiler that fails raises BuildFailure with its complete output, which the command prints
before its one-line error. Outputs are written under a private name and renamed into place, so a
running driver never sees a half-written executable.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from crashcheck.harness.target import link_check, link_errors, toolchain
from crashcheck.harness.core.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
C_SUFFIXES = (".c",)
CXX_SUFFIXES = (".cc", ".cpp", ".cxx", ".c++", ".C")
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".H", ".inl", ".ipp", ".tcc")
C_STD = "-std=gnu11"
CXX_STD = "-std=gnu++20"


class BuildFailure(UsageError):
    """A compile or link failed: the message is one line, `diagnostics` the compiler's whole output."""

    def __init__(self, message: str, diagnostics: str) -> None:
        super().__init__(message)
        self.diagnostics = diagnostics


def language(path: Path, headers: bool = False) -> str:
    """'c' or 'c++' by the file's suffix ('header' for a header, with HEADERS), or UsageError."""
    if path.suffix in C_SUFFIXES:
        return "c"
    if path.suffix in CXX_SUFFIXES:
        return "c++"
    if headers and path.suffix in HEADER_SUFFIXES:
        return "header"
    allowed = C_SUFFIXES + CXX_SUFFIXES + (HEADER_SUFFIXES if headers else ())
    raise UsageError(f"{path}: not a C or C++ {'file' if headers else 'source'} (suffixes {' '.join(allowed)})")


@dataclass
class Plan:
    """What to compile and how: the structure's SOURCES, its ADAPTER, the user's CFLAGS (for
    those two), COMMON_CFLAGS (for trees/common only)."""
    sources: list[Path]
    adapter: Path
    cflags: list[str]
    pm_malloc: bool = False
    ldflags: list[str] = field(default_factory=list)     # the user's libraries, at the link
    common: list[Path] = field(default_factory=lambda: sorted((ROOT / "trees" / "common").glob("*.c")))
    common_cflags: list[str] = field(default_factory=list)
    headers: list[Path] = field(default_factory=list)    # the structure's headers (not compiled alone)
    # instrument/build-pmdk's output: the traced drivers compile the structure and adapter against
    # its headers and link its libpmem and libpmemobj (crashcheck-cc --pmdk); trees/common and the
    # native driver do not (the native one links what --ldflags names: Debian's -lpmemobj)
    pmdk: Path | None = None
    # allocations the pass left in DRAM under pm_malloc: (file, line, callee) (missed_allocations)
    missed: set[tuple[str, int, str]] = field(default_factory=set)

    @property
    def cxx(self) -> bool:
        return any(language(p) == "c++" for p in self.sources + [self.adapter])

    def flags(self, lang: str, common: bool = False) -> list[str]:
        """The flags of one LANG compile: ours, then the user's (a user's -std= for the other
        language is left out, so `--cflags -std=c++17` does not reach the C files). COMMON: a
        file of trees/common, which gets --common-cflags instead of --cflags and no user folder
        on its include path."""
        given = self.common_cflags if common else self.cflags
        stds = [f for f in given if f.startswith("-std=")]
        mine = [f for f in stds if ("++" in f) == (lang == "c++")]
        rest = [f for f in given if not f.startswith("-std=")]
        std = mine or [CXX_STD if lang == "c++" else C_STD]
        ours = ["-O2", "-g", "-mclflushopt", "-mclwb", *std, f"-I{ROOT}/trees/common",
                f"-I{ROOT}/instrument/include", f"-I{ROOT}/crashsim/runner"]
        if common:
            return ours + rest
        folders = dict.fromkeys([self.adapter.parent, *(p.parent for p in self.sources + self.headers)])
        return ours + [f"-I{p}" for p in folders] + rest


def compilers(traced: bool) -> dict[str, str]:
    """The C and C++ compiler commands of the traced (pass) or native flavour."""
    if traced:
        return {"c": str(ROOT / "instrument" / "bin" / "crashcheck-cc"),
                "c++": str(ROOT / "instrument" / "bin" / "crashcheck-c++")}
    tc = toolchain.current()
    return {"c": tc.clang, "c++": tc.clangxx}


def missing_tools(plan: Plan) -> str | None:
    """What is not installed or built, or None."""
    tc = toolchain.current()
    need = [tc.clang] + ([tc.clangxx] if plan.cxx else [])
    for tool in need:
        if shutil.which(tool) is None:
            return f"{tool} is missing; run scripts/setup first"
    return None


def pass_env(plan: Plan) -> dict[str, str]:
    """The environment of a compile of the user's files: the pass names a store inside code
    outside the user's folders (the C++ standard library, glibc, crashcheck's persist.h) by the
    first line of the user's code it was inlined into (CRASHCHECK_PASS_SOURCE_ROOTS), and marks
    the sites in the structure's own files (CRASHCHECK_PASS_STRUCTURE_FILES), whose header lines
    name their stores (docs/trace-format.md)."""
    own = plan.sources + plan.headers + (included_sources(plan) if plan.pm_malloc else [])
    roots = sorted({str(p.parent) for p in own + [plan.adapter]})
    env = {**os.environ, "CRASHCHECK_PASS_SOURCE_ROOTS": ":".join(roots),
           "CRASHCHECK_PASS_STRUCTURE_FILES": ":".join(str(p) for p in own)}
    if plan.pm_malloc:
        env["CRASHCHECK_PASS_PM_MALLOC"] = "1"
    return env


_INCLUDED: dict[tuple, list[Path]] = {}


def included_sources(plan: Plan) -> list[Path]:
    """The C and C++ sources (by suffix) that the structure's sources #include, at any depth: a
    unity-build habit of real code (`#include "nodes.cpp"`). Their lines are the structure's as
    much as the file that includes them, so --pm-malloc sends their `new` to the pool too (the
    pass knows the structure's files by name; without this a node made there lands in DRAM and the
    run reports a node outside the pool and nondeterminism). Asked of the preprocessor (-MM: the
    user's includes, not the system's) once per build."""
    key = (tuple(plan.sources), tuple(plan.cflags), plan.adapter)
    if key in _INCLUDED:
        return _INCLUDED[key]
    found: dict[Path, None] = {}
    given = set(plan.sources + plan.headers)
    for src in plan.sources:
        lang = language(src)
        cmd = [compilers(False)[lang], *plan.flags(lang), "-MM", str(src)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            continue                  # the compile itself says why, with the whole output
        deps = re.split(r"(?<!\\)\s+", res.stdout.replace("\\\n", " ").split(":", 1)[-1].strip())
        for dep in deps:
            # as the pass names files: absolute, without . and .. (not through symlinks)
            path = Path(os.path.normpath(os.path.abspath(dep.replace("\\ ", " ")))) if dep else None
            if path and path.suffix in C_SUFFIXES + CXX_SUFFIXES and path not in given and path.is_file():
                found[path] = None
    _INCLUDED[key] = list(found)
    return _INCLUDED[key]


MISSED = "crashcheck-pass: pm-malloc missed: "


def missed_allocations(plan: Plan) -> list[str]:
    """One line per allocation of the structure's own code that --pm-malloc could not send to the
    pool: the pass reports a call at a line of the user's code outside the structure's files (a
    header not given to crashcheck build), whose objects would stay in DRAM and show at run time
    only as a node outside the pool or nondeterminism."""
    out = []
    for file, line, callee in sorted(plan.missed):
        what = "new" if callee.startswith("_Zn") else callee
        try:
            name = os.path.relpath(file)
        except ValueError:
            name = file
        name = name if not name.startswith("..") else file
        out.append(f"--pm-malloc: `{what}` at {name}:{line} stays in DRAM: {Path(file).name} is not one of "
                   f"the structure's files; give it to crashcheck build with the sources (FILES take "
                   f"headers too)")
    return out


def _run(cmd: list[str], what: str, env: dict[str, str] | None = None,
         missed: set[tuple[str, int, str]] | None = None) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if missed is not None:
        for line in res.stderr.splitlines():
            if line.startswith(MISSED):
                file, _, rest = line[len(MISSED):].partition("\t")
                num, _, callee = rest.partition("\t")
                if num.isdigit():
                    missed.add((file, int(num), callee))
    if res.returncode != 0:
        out = (res.stderr + res.stdout).rstrip()
        lines = out.splitlines()
        first = next((line for line in lines if "error" in line), lines[0] if lines else "no output")
        raise BuildFailure(f"{what} failed (exit {res.returncode}): {first.strip()}", out)


def _command(plan: Plan, src: Path, traced: bool) -> list[str]:
    """The compiler and flags for SRC (its language's; pm_malloc.h forced into the structure's
    own sources with pm_malloc; the untraced compile of a user's file runs the pass for the
    allocations alone)."""
    lang = language(src)
    cmd = [compilers(traced)[lang], *pmdk_flags(plan, traced and src not in plan.common),
           *plan.flags(lang, common=src in plan.common)]
    if plan.pm_malloc and not traced and src not in plan.common:
        cmd += [f"-fpass-plugin={pass_plugin()}"]
    if plan.pm_malloc and src in plan.sources:
        cmd += ["-include", str(ROOT / "trees" / "common" / "pm_malloc.h")]
    elif plan.pm_malloc and src == plan.adapter:
        cmd += ["-include", str(ROOT / "trees" / "common" / "pm_free.h")]
    return cmd


def pmdk_flags(plan: Plan, traced: bool) -> list[str]:
    """crashcheck-cc's --pmdk for a traced compile or link of a plan with an instrumented PMDK."""
    return ["--pmdk", str(plan.pmdk)] if plan.pmdk is not None and traced else []


def check_pmdk(folder: Path) -> Path:
    """FOLDER, resolved, when it is instrument/build-pmdk's output; else UsageError (one line)."""
    folder = folder.expanduser().resolve()
    if not (folder / "lib" / "libpmemobj.a").is_file() or not (folder / "include" / "libpmemobj.h").is_file():
        raise UsageError(f"--pmdk {folder}: no instrumented PMDK build (no lib/libpmemobj.a or "
                         f"include/libpmemobj.h); make one with instrument/build-pmdk TREE {folder}")
    return folder


# An adapter that says its structure is thread-safe (`.threads = 1`, trees/common/cc_tree.h): as
# for the built-in trees (trees/build.mk), its traced code logs loads, which threaded runs look
# for persistency races in (harness/check/persistency_race.py; single-threaded runs turn them off)
THREADS_DECLARED = re.compile(r"^\s*\.threads\s*=\s*[1-9]", re.M)


def declares_threads(adapter: Path) -> bool:
    try:
        return THREADS_DECLARED.search(adapter.read_text(errors="replace")) is not None
    except OSError:
        return False


def compile_object(plan: Plan, src: Path, obj: Path, traced: bool, extra: list[str]) -> None:
    env = None if src in plan.common else pass_env(plan)
    if env is not None and not traced:
        env["CRASHCHECK_PASS_ALLOC_ONLY"] = "1"
    if env is not None and traced and declares_threads(plan.adapter):
        env["CRASHCHECK_PASS_LOADS"] = "1"
    _run(_command(plan, src, traced) + extra + ["-c", str(src), "-o", str(obj)], f"compiling {src.name}", env,
         plan.missed if plan.pm_malloc and src in plan.sources else None)


def syntax_check(plan: Plan) -> None:
    """The structure's sources and adapter through the native compiler's front end only: a
    mistake there shows in a second, before any driver is compiled."""
    for src in plan.sources + [plan.adapter]:
        _run(_command(plan, src, False) + ["-fsyntax-only", str(src)], f"compiling {src.name}")


def common_objects(plan: Plan, workdir: Path, traced: bool) -> list[Path]:
    """trees/common compiled once for the traced (or native) flavour, into WORKDIR."""
    objs = []
    for src in plan.common:
        obj = workdir / f"common-{'traced' if traced else 'native'}-{src.stem}.o"
        compile_object(plan, src, obj, traced, [])
        objs.append(obj)
    return objs


def build_variant(plan: Plan, out: Path, common: list[Path], workdir: Path, traced: bool,
                  defines: list[str] = ()) -> None:
    """The driver OUT: the structure's sources and adapter (with DEFINES) linked with COMMON."""
    tag = out.name
    objs = []
    for i, src in enumerate(plan.sources + [plan.adapter]):
        obj = workdir / f"{tag}-{i}-{src.stem}.o"
        compile_object(plan, src, obj, traced, [f"-D{d}" for d in defines])
        objs.append(obj)
    why = link_check.before_link(objs, plan.adapter)
    if why is not None:
        raise BuildFailure(f"linking {out.name} failed: {why}", "")
    cc = compilers(traced)["c++" if plan.cxx else "c"]
    tail = [] if traced else [str(runtime()), "-lpthread", "-ldl"]
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        _run([cc, *pmdk_flags(plan, traced), *map(str, objs + common), *tail, *plan.ldflags, "-o", str(tmp)],
             f"linking {out.name}")
        os.replace(tmp, out)
    except BuildFailure as exc:
        # the linker's last line says only that it failed: say what is missing
        why = link_errors.reason(exc.diagnostics, plan.sources + plan.headers + [plan.adapter], plan.adapter)
        if why is None:
            raise
        raise BuildFailure(f"linking {out.name} failed: {why}", exc.diagnostics) from None
    finally:
        tmp.unlink(missing_ok=True)


def pass_plugin() -> Path:
    from crashcheck.harness.target import structures
    return structures.BUILD / "libcrashcheck_pass.so"


def runtime() -> Path:
    from crashcheck.harness.target import structures
    return structures.BUILD / "libcrashcheck_rt.a"


def objects_dir(out: Path) -> tempfile.TemporaryDirectory:
    """A private scratch folder for one build's objects, beside its drivers."""
    return tempfile.TemporaryDirectory(prefix=".objs-", dir=out)
