"""What this machine gives crashcheck: the probes behind `crashcheck doctor`.

Owns finding, without building or running anything under test, each part crashcheck uses (the
Clang the pass is built for, the pass, runtime and runner, libpmem and libpmemobj, pmemcheck,
Dask, the Python libraries, the kernel features the runner's fast paths use, the work folder and
the folders of users' builds) and saying, for a part that is missing, what it costs and how to
get it. A probe never raises: a part it cannot inspect is reported as missing with the reason.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from crashcheck.harness.core import workdir
from crashcheck.harness.target import structures, toolchain, tracers

# how to get crashcheck's own parts: a checkout builds them (its Makefile), an installation by
# pip came with them and gets them again the same way
SETUP = ("run scripts/setup in crashcheck's folder (apt packages, .venv, make)"
         if (structures.ROOT / "Makefile").is_file() else
         "reinstall crashcheck: pip install <crashcheck's repository> (docs/ci.md \"Install\")")


@dataclass
class Probe:
    """One part: NAME, whether it was found (OK), what was found or why not (DETAIL), how to get
    it (FIX, when missing) and whether crashcheck cannot check anything without it (REQUIRED)."""
    name: str
    ok: bool
    detail: str
    fix: str = ""
    required: bool = False

    def as_json(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix,
                "required": self.required}


def _run(argv: list[str], timeout: float = 10.0) -> str | None:
    """ARGV's first line of output, or None when it cannot run or fails."""
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else ""


def _compilers() -> list[Probe]:
    # the clang the pass was built for (build/toolchain.env, or the CRASHCHECK_CLANG override);
    # another LLVM's clang cannot load the pass
    tc = toolchain.current()
    out = []
    for exe, what in ((tc.clang, "C"), (tc.clangxx, "C++")):
        version = _run([exe, "--version"]) if shutil.which(exe) else None
        ok = version is not None and f"clang version {tc.major}." in version
        detail = (version if ok else f"{version}, but the pass was built for LLVM {tc.major}" if version
                  else f"not on PATH: {what} structures cannot be built")
        fix = (f"unset CRASHCHECK_CLANG / CRASHCHECK_CLANGXX, or rebuild the pass for this clang: make LLVM=N"
               if version else f"apt install clang-{tc.major} (Debian 12, Ubuntu 24.04: also in apt.llvm.org), "
               "or rebuild the pass for the clang you have: make LLVM=N (14 to 19)")
        out.append(Probe(exe, ok, detail, fix, required=True))
    llvm = _run([tc.llvm_config, "--version"]) if shutil.which(tc.llvm_config) else None
    out.append(Probe(tc.llvm_config, llvm is not None,
                     f"LLVM {llvm}" if llvm else "not on PATH: the pass cannot be rebuilt",
                     f"apt install llvm-{tc.major}-dev"))
    return out


def _built_parts() -> list[Probe]:
    build = structures.BUILD
    out = []
    for name, path in (("crashcheck pass", build / "libcrashcheck_pass.so"),
                       ("crashcheck runtime and runner", build / "libcrashcheck_rt.a")):
        out.append(Probe(name, path.is_file(), str(path) if path.is_file() else f"{path} is missing",
                         SETUP + (" or set CRASHCHECK_BUILD to the folder that holds it"
                                  if os.environ.get("CRASHCHECK_BUILD") else ""), required=True))
    trees = sorted(p.name for p in (build / "trees").glob("*") if p.is_dir()) if (build / "trees").is_dir() else []
    out.append(Probe("built-in structures", bool(trees),
                     f"{len(trees)} built in {build / 'trees'}" if trees else f"none built in {build / 'trees'}",
                     SETUP, required=True))
    return out


def _library(name: str, why: str) -> Probe:
    version = _run(["pkg-config", "--modversion", name]) if shutil.which("pkg-config") else None
    if version is None:
        found = _run(["sh", "-c", f"ldconfig -p | grep -m1 '{name}\\.so'"])
        if found:
            return Probe(name, True, f"found ({found.split('=>')[-1].strip()}; no pkg-config file)")
    return Probe(name, version is not None, f"{name} {version}" if version else f"not found: {why}",
                 f"apt install {name}-dev")


def _pmemcheck() -> Probe:
    try:
        cmd = tracers.pmemcheck_command()
    except Exception as exc:      # UsageError saying how to get it
        given = os.environ.get(tracers.ENV)
        return Probe("pmemcheck", False, f"{exc}" if given else "not found: --tracer pmemcheck cannot run",
                     "put PMDK's Valgrind fork (pmemcheck) on PATH or set CRASHCHECK_PMEMCHECK to its "
                     "wrapper or valgrind binary")
    return Probe("pmemcheck", True, " ".join(cmd))


def _python_package(dist: str, why: str, required: bool) -> Probe:
    try:
        version = importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return Probe(dist, False, f"not installed: {why}", f"pip install {dist} (into crashcheck's .venv)", required)
    return Probe(dist, True, f"{dist} {version}", required=required)


def _kernel() -> list[Probe]:
    release = platform.release()
    try:
        major, minor = (int(x) for x in release.split(".")[:2])
        scan = (major, minor) >= (6, 7)
    except ValueError:
        scan = False
    out = [Probe("PAGEMAP_SCAN", scan,
                 f"Linux {release}: the reused check process finds the pages a check wrote in one call"
                 if scan else f"Linux {release} is older than 6.7: the runner reads /proc/self/pagemap "
                              "instead (correct, slower per state)",
                 "a Linux 6.7 or later kernel")]
    memfd = hasattr(os, "memfd_create")
    if memfd:
        try:
            os.close(os.memfd_create("crashcheck-doctor"))
        except OSError:
            memfd = False
    out.append(Probe("memfd_create", memfd,
                     "the pool is a memfd: states share its pages" if memfd
                     else "not available: every state forks a child of its own (much slower)",
                     "a kernel with memfd_create (Linux 3.17 and later)"))
    pagemap = os.access("/proc/self/pagemap", os.R_OK)
    out.append(Probe("/proc/self/pagemap", pagemap, "readable" if pagemap
                     else "not readable: the reused check process cannot restore itself, states fork",
                     "mount /proc (containers: do not mask /proc/self/pagemap)"))
    return out


def _size(path: Path) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path, onerror=lambda e: None):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def _work_folder() -> list[Probe]:
    try:
        root = workdir.scratch_root()
    except Exception as exc:       # SetupError: a CRASHCHECK_WORKDIR that cannot be used
        return [Probe("work folder", False, str(exc), "point CRASHCHECK_WORKDIR at a writable folder", True)]
    try:
        free = workdir.free_bytes(root)
    except OSError as exc:
        return [Probe("work folder", False, f"{root}: {exc.strerror}", "point CRASHCHECK_WORKDIR at a writable folder", True)]
    ours = [p for p in root.iterdir() if p.name.startswith(workdir.PREFIX) and p.is_dir()] if root.is_dir() else []
    used = sum(_size(p) for p in ours)
    room = free >= 64 << 20
    return [Probe("work folder", room and os.access(root, os.W_OK),
                  f"{root}: {free >> 20} MiB free; crashcheck's folders there: {len(ours)}, {used >> 20} MiB",
                  "free some space or set CRASHCHECK_WORKDIR to a larger folder", True)]


def _user_builds() -> Probe:
    folders = structures.user_build_folders()
    found = [(f, sorted(p.name for p in f.iterdir() if (p / "meta.json").is_file()))
             for f in folders if f.is_dir()]
    names = sum(len(n) for _f, n in found)
    where = ", ".join(f"{f} ({len(n)})" for f, n in found) or "none yet"
    return Probe("users' builds", True, f"{names} found; searched {', '.join(str(f) for f in folders)}; "
                                        f"present: {where}")


def probe_all() -> list[Probe]:
    """Every probe, in the order `crashcheck doctor` prints them."""
    return [
        *_compilers(),
        *_built_parts(),
        _library("libpmem", "structures and programs using libpmem cannot be built"),
        _library("libpmemobj", "libpmemobj structures and programs cannot be built"),
        _pmemcheck(),
        _python_package("hypothesis", "histories cannot be generated", True),
        _python_package("jinja2", "HTML reports cannot be written", True),
        _python_package("distributed", "--dask cannot run", False),
        *_kernel(),
        *_work_folder(),
        _user_builds(),
    ]


__all__ = ["Probe", "probe_all"]
