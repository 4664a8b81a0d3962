"""`crashcheck-cc` and `crashcheck-c++` on PATH (pyproject.toml [project.scripts]).

Owns only handing the command line to this installation's compiler wrappers,
instrument/bin/crashcheck-cc and -c++ (shell scripts beside the package: they add the pass, the
runtime and the clang the pass was built for, build/toolchain.env). A pip-installed crashcheck
has no checkout to name, so `make CC=crashcheck-cc` needs them on PATH.
"""
from __future__ import annotations

import os
import sys

from crashcheck.harness.target import structures


def _exec(name: str) -> None:
    wrapper = structures.ROOT / "instrument" / "bin" / name
    try:
        os.execv(wrapper, [str(wrapper), *sys.argv[1:]])
    except OSError as exc:
        print(f"{name}: cannot run {wrapper}: {exc.strerror}; reinstall crashcheck", file=sys.stderr)
        sys.exit(2)


def cc() -> None:
    _exec("crashcheck-cc")


def cxx() -> None:
    _exec("crashcheck-c++")
