"""The instrumentation corpus: parse each program's expectations, build, run, compare.

Owns: reading the expectation block of tests/corpus/*.c (format in README.md), building a
program at a level with crashcheck-cc for a pass build (build/, or another LLVM's build-llvmN/:
tests/llvm_builds.py), once per test process and only when a test asks for it (pytest -n's
workers each build only the programs of their own tests), running one build with
CRASHCHECK_TRACE, and turning trace events into comparable one-line records. Never decides what
a construct should produce: that is the data in each program.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(__file__).resolve().parent
ROOT = CORPUS.parent.parent
CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
CXX = ROOT / "instrument" / "bin" / "crashcheck-c++"
LEVELS = ("O0", "O2")
POOL_SIZE = 1 << 20
DEFAULT_POOL_ADDR = 0x600000000000

_MARKER = re.compile(r"/\*\s*@(\w+)\s*\*/")
_BLOCK = re.compile(r"/\*\s*crashcheck-corpus\b(.*?)\*/", re.S)
_BRACED = re.compile(r"\{([^{}]*)\}")


class CorpusError(Exception):
    """A corpus program whose expectation block cannot be read."""


def le(value: int, size: int) -> str:
    """VALUE as SIZE little-endian bytes, in hex (for data= fields)."""
    return (value & ((1 << (8 * size)) - 1)).to_bytes(size, "little").hex()


def rep(hex_bytes: str, count: int) -> str:
    """HEX_BYTES repeated COUNT times (for data= fields of fills)."""
    return hex_bytes * count


@dataclass
class Program:
    name: str
    path: Path
    construct: str
    markers: dict[str, int]
    cflags: list[str] = field(default_factory=list)
    ldflags: list[str] = field(default_factory=list)
    levels: tuple[str, ...] = LEVELS
    exit: int = 0                   # exit status, or -SIGNAL
    complete: bool = True
    per_thread: bool = False
    cpu: list[str] = field(default_factory=list)   # /proc/cpuinfo flags the program needs
    expect: list[tuple[tuple[str, ...], str, str, tuple[int, int]]] = field(default_factory=list)
    # (levels, range, event, LLVM majors [from, to) it holds for)

    @property
    def loads(self) -> bool:
        return "--crashcheck-loads" in self.cflags

    def expected(self, level: str, llvm: int | None = None) -> list[dict]:
        """The events at LEVEL with the pass of LLVM major LLVM (default: the build's, llvm_major())."""
        llvm = llvm_major() if llvm is None else llvm
        out = []
        for levels, each, text, (lo, hi) in self.expect:
            if levels and level not in levels:
                continue
            if not lo <= llvm < hi:
                continue
            for i in range(each):
                out.append(self._event(text, i))
        return out

    def _event(self, text: str, i: int) -> dict:
        env = {"i": i, "le": le, "rep": rep, "bytes": bytes, "range": range, "__builtins__": {}}
        try:
            text = _BRACED.sub(lambda m: str(eval(m.group(1), env)), text)  # noqa: S307 (our data)
        except Exception as exc:
            raise CorpusError(f"{self.path.name}: cannot evaluate {text!r}: {exc}") from None
        ev = {"tid": 0, "kind": "", "sub": "", "region": None, "off": None, "size": 0, "data": "",
              "index": None, "line": None, "func": "main", "inl": None, "ifunc": ""}
        for w in text.split():
            key, eq, value = w.partition("=")
            if not eq:
                if ev["kind"]:
                    raise CorpusError(f"{self.path.name}: two kinds in {text!r}")
                ev["kind"], _, ev["sub"] = w.partition("/")
                continue
            if key not in ev or key in ("kind", "sub"):
                raise CorpusError(f"{self.path.name}: bad field {w!r} in {text!r}")
            if key in ("line", "inl"):
                ev[key] = self.line_of(value)
            elif key in ("tid", "region", "off", "size", "index"):
                ev[key] = int(value, 0)
            else:
                ev[key] = value
        if ev["off"] is not None and ev["region"] is None:
            ev["region"] = 0
        if not ev["kind"] or ev["line"] is None:
            raise CorpusError(f"{self.path.name}: event without a kind or line= in {text!r}")
        return ev

    def line_of(self, value: str) -> int:
        if not value.startswith("@"):
            raise CorpusError(f"{self.path.name}: lines are markers (@name), not {value!r}")
        try:
            return self.markers[value[1:]]
        except KeyError:
            raise CorpusError(f"{self.path.name}: no /* {value} */ marker in the source") from None


def llvm_major(build: Path | None = None) -> int:
    """The LLVM the pass under test was built with: BUILD's (default $CRASHCHECK_BUILD's, or
    build/'s) toolchain record, as crashcheck-cc reads it; 16 for a build from before the record."""
    build = build or Path(os.environ.get("CRASHCHECK_BUILD") or ROOT / "build")
    try:
        for line in (build / "toolchain.env").read_text().splitlines():
            if line.startswith("LLVM_MAJOR="):
                return int(line.split("=", 1)[1])
    except (OSError, ValueError):
        pass
    return 16


def parse_program(path: Path) -> Program:
    text = path.read_text()
    markers: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        for m in _MARKER.finditer(line):
            if m.group(1) in markers:
                raise CorpusError(f"{path.name}: marker @{m.group(1)} used twice")
            markers[m.group(1)] = number
    block = _BLOCK.search(text)
    if not block:
        raise CorpusError(f"{path.name}: no /* crashcheck-corpus ... */ block")
    prog = Program(path.stem, path, "", markers)
    for raw in block.group(1).splitlines():
        line = raw.strip().lstrip("*").strip()
        if not line:
            continue
        if "=>" in line:
            head, _, event = line.partition("=>")
            levels, each, llvm = [], 1, [0, 1000]
            for tok in head.split():
                if tok in LEVELS:
                    levels.append(tok)
                elif tok.startswith("i<"):
                    each = int(tok[2:], 0)
                elif tok.startswith("llvm>=") and tok[6:].isdigit():
                    llvm[0] = int(tok[6:])
                elif tok.startswith("llvm<") and tok[5:].isdigit():
                    llvm[1] = int(tok[5:])
                else:
                    raise CorpusError(f"{path.name}: bad prefix {tok!r} in {line!r}")
            prog.expect.append((tuple(levels), each, event.strip(), (llvm[0], llvm[1])))
            continue
        key, colon, value = line.partition(":")
        value = value.strip()
        if not colon:
            raise CorpusError(f"{path.name}: unreadable line {line!r}")
        if key == "construct":
            prog.construct = value
        elif key == "cflags":
            prog.cflags += value.split()
        elif key == "ldflags":
            prog.ldflags += value.split()
        elif key == "levels":
            prog.levels = tuple(value.split())
        elif key == "exit":
            prog.exit = -getattr(signal, value) if value.startswith("SIG") else int(value)
        elif key == "complete":
            prog.complete = value == "yes"
        elif key == "order":
            prog.per_thread = value == "per-thread"
        elif key == "cpu":
            prog.cpu = value.split()
        else:
            raise CorpusError(f"{path.name}: unknown key {key!r}")
    if not prog.construct:
        raise CorpusError(f"{path.name}: no 'construct:' line")
    return prog


def programs() -> list[Program]:
    return [parse_program(p) for p in sorted([*CORPUS.glob("*.c"), *CORPUS.glob("*.cpp")])]


def cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@dataclass
class Build:
    program: Program
    level: str
    exe: Path
    error: str = ""     # compiler output when the build failed


def _env(build: Path | None) -> dict[str, str]:
    """The environment of crashcheck-cc for the pass in BUILD (None: the one it finds itself)."""
    env = dict(os.environ)
    env.pop("CRASHCHECK_PASS_STATS", None)
    if build is not None:
        env["CRASHCHECK_BUILD"] = str(build)
        env.pop("CRASHCHECK_CLANG", None)
        env.pop("CRASHCHECK_CLANGXX", None)
    return env


def compile_one(prog: Program, level: str, out: Path, build: Path | None = None) -> Build:
    """PROG at LEVEL into OUT, with the pass and runtime of BUILD (default: crashcheck-cc's own)."""
    out.mkdir(parents=True, exist_ok=True)
    exe = out / f"{prog.name}.{level}"
    cc = CXX if prog.path.suffix == ".cpp" else CC
    cmd = [str(cc), f"-{level}", "-Wall", "-Werror", "-I", str(CORPUS), *prog.cflags,
           str(prog.path), "-o", str(exe), *prog.ldflags]
    res = subprocess.run(cmd, capture_output=True, text=True, env=_env(build), timeout=120)
    if res.returncode != 0:
        return Build(prog, level, exe, f"{' '.join(cmd)}\n{res.stdout}{res.stderr}")
    return Build(prog, level, exe)


class Builds:
    """The corpus built into OUT with the pass of BUILD, a program at a level compiled the first
    time a test asks for it: `builds[(name, level)]`. The LLVM it was built for: `llvm`."""

    def __init__(self, out: Path, build: Path | None = None) -> None:
        self.out, self.build = out, build
        self.llvm = llvm_major(build)
        self._programs = {p.name: p for p in programs()}
        self._done: dict[tuple[str, str], Build] = {}

    def __getitem__(self, key: tuple[str, str]) -> Build:
        if key not in self._done:
            name, level = key
            self._done[key] = compile_one(self._programs[name], level, self.out, self.build)
        return self._done[key]


_BUILDS: dict[Path, Builds] = {}


def builds(out: Path, build: Path | None = None) -> Builds:
    """The corpus's builds in OUT with the pass of BUILD: one Builds per OUT folder."""
    if out not in _BUILDS:
        _BUILDS[out] = Builds(out, build)
    return _BUILDS[out]


def run(exe: Path, workdir: Path, *args: str, trace: bool = True, env: dict | None = None,
        timeout: float = 30) -> tuple[subprocess.CompletedProcess, Path]:
    """Run EXE in WORKDIR with its pool at WORKDIR/pool; returns the result and the trace path."""
    workdir.mkdir(parents=True, exist_ok=True)
    tr = workdir / "trace"
    full = dict(os.environ)
    full.pop("CRASHCHECK_TRACE", None)
    full.pop("CRASHCHECK_POOL_ADDR", None)
    if trace:
        full["CRASHCHECK_TRACE"] = str(tr)
    full.update(env or {})
    res = subprocess.run([str(exe), str(workdir / "pool"), *args], capture_output=True,
                         text=True, env=full, timeout=timeout, cwd=workdir)
    return res, tr


def actual_record(trace, ev) -> dict:
    """An event of TRACE in the same shape as Program.expected() gives."""
    site = trace.site(ev.site)
    rec = {"tid": ev.tid, "kind": ev.kind, "sub": ev.sub, "region": ev.region, "off": ev.off,
           "size": ev.size,
           "data": ev.data.hex(), "index": None, "line": None, "func": "", "inl": None,
           "ifunc": ""}
    if ev.kind in ("op_begin", "op_end"):
        rec["index"] = ev.addr
    if site is not None:
        rec.update(line=site.line, func=site.func, inl=site.inlined_line or None,
                   ifunc=site.inlined_func)
    return rec


def describe(rec: dict) -> str:
    """One comparable line per event (the test compares lists of these)."""
    kind = rec["kind"] + (f"/{rec['sub']}" if rec["sub"] else "")
    parts = [f"t{rec['tid']}", kind]
    if rec["off"] is not None:
        region = f"r{rec['region']}+" if rec["region"] else ""
        parts.append(f"off={region}{rec['off']:#x}")
    if rec["index"] is not None:
        parts.append(f"index={rec['index']}")
    if rec["size"]:
        parts.append(f"size={rec['size']}")
    if rec["data"]:
        parts.append(f"data={rec['data']}")
    parts.append(f"line={rec['line']}")
    parts.append(f"func={rec['func']}")
    if rec["inl"] is not None or rec["ifunc"]:
        parts.append(f"inlined-at={rec['inl']}:{rec['ifunc']}")
    return " ".join(parts)


def build_support(name: str, out: Path, build: Path | None = None) -> Path:
    """tests/corpus/support/NAME.c built at -O2 into OUT (once) with the pass of BUILD (default:
    crashcheck-cc's own); fails the caller on error."""
    exe = out / f"support-{name}"
    if not exe.exists():
        out.mkdir(parents=True, exist_ok=True)
        cmd = [str(CC), "-O2", "-Wall", "-Werror", str(CORPUS / "support" / f"{name}.c"),
               "-o", str(exe)]
        res = subprocess.run(cmd, capture_output=True, text=True, env=_env(build), timeout=120)
        if res.returncode != 0:
            raise CorpusError(f"{' '.join(cmd)} failed:\n{res.stdout}{res.stderr}")
    return exe
