"""What the objects of a driver lack, found with nm before they are linked.

Owns the checks `crashcheck build` makes on the structure's and the adapter's compiled objects
before the link (harness/target/build_compile.py calls `before_link`): the adapter's table
`cc_adapter`, which the driver looks up by that C name. Found here, its absence is one line
whatever linker the user chose (GNU ld, gold and lld word an undefined symbol each their own way;
harness/target/link_errors.py reads GNU ld's), and a table the compiler gave internal or C++
linkage is told apart from one that is missing.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

TABLE = "cc_adapter"
GLOBAL_DATA = set("DRBGSCV")       # nm's types of a defined, external variable


def no_table(adapter: Path) -> str:
    """The line for an adapter that defines no `cc_adapter` at all (link_errors says it too)."""
    return (f"the adapter {adapter.name} defines no `cc_adapter`: every adapter defines the table "
            "`const struct cc_adapter cc_adapter = { .name = ..., ... };` (trees/common/cc_tree.h); "
            "in C++ include cc_tree.h first, for its C linkage")


def _symbols(obj: Path) -> list[tuple[str, str]] | None:
    """(type, name) of every symbol OBJ defines, or None when nm cannot say."""
    nm = shutil.which("nm") or shutil.which("llvm-nm")
    if nm is None:
        return None
    try:
        res = subprocess.run([nm, "--defined-only", str(obj)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    if res.returncode != 0:
        return None
    out = []
    for line in res.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            out.append((parts[-2], parts[-1]))
    return out


def before_link(objs: list[Path], adapter: Path) -> str | None:
    """One line saying why OBJS (the structure's and the adapter's objects) cannot make a driver,
    or None. A check nm cannot make is left to the linker."""
    seen: list[tuple[str, str]] = []
    for obj in objs:
        syms = _symbols(obj)
        if syms is None:
            return None
        seen += syms
    if any(name == TABLE and kind in GLOBAL_DATA for kind, name in seen):
        return None
    if any(name == TABLE for _, name in seen) or any(name == f"_ZL{len(TABLE)}{TABLE}" for _, name in seen):
        return (f"the adapter {adapter.name} defines `cc_adapter` with internal linkage (`static`, or a "
                "C++ `const` that no `extern \"C\"` declaration reached): include cc_tree.h before the "
                "table, whose declaration gives it the external C name the driver looks up")
    if any(f"{len(TABLE)}{TABLE}E" in name for _, name in seen):
        return (f"the adapter {adapter.name} defines `cc_adapter` inside a C++ namespace: define the "
                "table at global scope, after including cc_tree.h")
    return no_table(adapter)


__all__ = ["before_link", "no_table"]
