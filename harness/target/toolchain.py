"""Which clang the built pass is for: the toolchain record make writes next to the pass.

Owns reading <build>/toolchain.env (written by instrument/build.mk: LLVM_MAJOR, LLVM_CONFIG, CLANG,
CLANGXX; which LLVM is chosen is instrument/select-llvm's job) and the overrides
CRASHCHECK_CLANG / CRASHCHECK_CLANGXX, exactly as crashcheck-cc reads them, so the native drivers
of `crashcheck build`, the traced ones and `crashcheck doctor` use one clang. A build without the
record (made before it existed) is clang-16's.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from crashcheck.harness.target import structures


@dataclass(frozen=True)
class Toolchain:
    major: int          # the LLVM the pass was built with
    llvm_config: str
    clang: str          # compilers to use (the record's, or the overrides)
    clangxx: str


def _record(build: Path) -> dict[str, str]:
    try:
        text = (build / "toolchain.env").read_text()
    except OSError:
        return {}
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def current(build: Path | None = None) -> Toolchain:
    """The toolchain of BUILD (default: crashcheck's build folder), with the environment's overrides."""
    rec = _record(build or structures.BUILD)
    try:
        major = int(rec.get("LLVM_MAJOR", "16"))
    except ValueError:
        major = 16
    return Toolchain(major, rec.get("LLVM_CONFIG") or f"llvm-config-{major}",
                     os.environ.get("CRASHCHECK_CLANG") or rec.get("CLANG") or f"clang-{major}",
                     os.environ.get("CRASHCHECK_CLANGXX") or rec.get("CLANGXX") or f"clang++-{major}")


__all__ = ["Toolchain", "current"]
