"""Which of the system's usual libraries defines a symbol, and the flag that links it.

Owns the answer to "undefined reference to `exp2`: which library?" for harness/target/link_errors.py.
It asks the libraries themselves (the dynamic symbols of the installed libm.so.6, libpmem.so.1,
..., read once each with `nm -D`) instead of keeping a list of their functions, so every function
of the math library is named `-lm` on any machine, and nothing is named a library's that the
installed one lacks. Only the libraries a structure commonly forgets are asked; a symbol in none of
them (or a library not installed) gives None, and the caller says "--ldflags -l<library>".
"""
from __future__ import annotations

import ctypes.util
import os
import shutil
import subprocess
from functools import lru_cache

from crashcheck.harness.target import toolchain

# (library name as -l takes it, the flag to give): the order is the order of asking.  pthread's
# functions live in libc since glibc 2.34; an older glibc keeps them in libpthread.so.0.
LIBRARIES = (("m", "-lm"), ("pthread", "-pthread"), ("pmem", "-lpmem"), ("pmemobj", "-lpmemobj"),
             ("rt", "-lrt"), ("dl", "-ldl"))
# What each library is called in the one line (a reader knows "the C math library" better than libm).
TITLES = {"m": "the C math library", "pthread": "the POSIX threads library", "pmem": "libpmem",
          "pmemobj": "libpmemobj", "rt": "the POSIX real-time library", "dl": "the dynamic-linking library"}


@lru_cache(maxsize=None)
def _path(name: str) -> str | None:
    """The installed shared library of -lNAME (its soname's file), or None."""
    soname = ctypes.util.find_library(name)
    if not soname:
        return None
    # the linker's own search path: clang prints the file it would link (or the bare name)
    try:
        found = subprocess.run([toolchain.current().clang, f"-print-file-name={soname}"],
                               capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return found if os.path.isabs(found) and os.path.isfile(found) else None


@lru_cache(maxsize=None)
def _defined(name: str) -> frozenset[str]:
    """The functions and variables the installed -lNAME defines (empty if it is not installed)."""
    path, nm = _path(name), shutil.which("nm") or shutil.which("llvm-nm")
    if path is None or nm is None:
        return frozenset()
    try:
        out = subprocess.run([nm, "-D", "--defined-only", path], capture_output=True, text=True,
                             timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    names = set()
    for line in out.splitlines():
        parts = line.split()
        # "00000000000393d0 T exp2@@GLIBC_2.29": an absolute `A` entry is a version tag, not a symbol
        if len(parts) == 3 and parts[1] != "A":
            names.add(parts[2].split("@", 1)[0])
    return frozenset(names)


def library_of(symbol: str) -> tuple[str, str] | None:
    """(the library's title, the flag to link it) for the first usual library defining SYMBOL."""
    for name, flag in LIBRARIES:
        if symbol in _defined(name):
            return TITLES[name], flag
    return None


__all__ = ["library_of"]
