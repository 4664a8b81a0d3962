"""bench/pmdk-suite/internal_lib.py -- what a PMDK test program that links libpmemobj's internals
needs, for bench/pmdk-suite/run.

Such a program (its Makefile sets LIBPMEMOBJ=internal-debug or internal-nondebug) calls and
mocks functions that libpmemobj keeps hidden: PMDK links it with the library's object files, not
with the library, and wraps each function its source mocks (FUNC_MOCK(name, ...) under the
linker's --wrap=name). Debian's libpmemobj cannot give that, and neither can build-pmdk's archive
(one object whose hidden symbols are made local), but build-pmdk compiles those objects in its
tree (pmdk.env names it): they are linked here, compiled with the pass.
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


class NotUsable(Exception):
    """The build cannot serve the program; the message says why, in one line."""


def internal_lib(program_dir: Path) -> str | None:
    """The library PROGRAM_DIR's Makefile links by its internals ('libpmemobj'), else None."""
    mk = program_dir / "Makefile"
    text = mk.read_text(errors="replace") if mk.is_file() else ""
    m = re.search(r"^\s*LIB(PMEMOBJ|PMEM)\s*[:?]?=\s*internal-(?:debug|nondebug)\b", text, re.M)
    return f"lib{m.group(1).lower()}" if m else None


def mocked(source: Path) -> list[str]:
    """The functions SOURCE mocks (FUNC_MOCK and FUNC_MOCK_NONSTATIC), in order, once each."""
    names = re.findall(r"^\s*FUNC_MOCK(?:_NONSTATIC)?\(\s*(\w+)", source.read_text(errors="replace"), re.M)
    return list(dict.fromkeys(names))


@dataclass
class PmdkBuild:
    """An instrument/build-pmdk output and the tree it was built in; or (OUT None) a tree where
    PMDK's own make built the libraries plain (pmreorder's side)."""
    out: Path | None
    tree: Path
    commit: str

    @classmethod
    def plain(cls, tree: Path) -> "PmdkBuild":
        res = subprocess.run(["git", "-C", str(tree), "rev-parse", "HEAD"], capture_output=True, text=True)
        if res.returncode:
            raise NotUsable(f"{tree}: not a git clone of PMDK")
        return cls(None, tree, res.stdout.strip())

    def archive(self, lib: str) -> Path:
        """LIB's static archive as the tree's make left it."""
        a = self.tree / "src" / "nondebug" / f"{lib}.a"
        if not a.is_file():
            raise NotUsable(f"no {a}: build the tree's libraries first (make -C src/{lib})")
        return a

    @classmethod
    def read(cls, out: Path) -> "PmdkBuild":
        env = out / "pmdk.env"
        if not env.is_file():
            raise NotUsable(f"{out}: no pmdk.env (not an instrument/build-pmdk output)")
        values = dict(line.partition("=")[::2] for line in env.read_text().splitlines() if "=" in line)
        if "tree" not in values:
            raise NotUsable(f"{env}: names no tree")
        return cls(out, Path(values["tree"]), values.get("commit", "unknown"))

    def objects(self, lib: str) -> list[Path]:
        """LIB's object files in the tree, each once: not the relocatable objects the archive is
        made of (LIB_all.o, LIB_unscoped.o: every object again, merged)."""
        folder = self.tree / "src" / "nondebug" / lib
        objs = sorted(o for o in folder.glob("*.o") if not o.stem.endswith(("_all", "_unscoped")))
        if not objs:
            raise NotUsable(f"no object files of {lib} in {folder} (not built, or cleaned since)")
        return objs

    def check_commit(self, pmdk: Path) -> None:
        """The program's headers come from PMDK; the objects must be of the same commit."""
        res = subprocess.run(["git", "-C", str(pmdk), "rev-parse", "HEAD"], capture_output=True, text=True)
        head = res.stdout.strip()
        if res.returncode == 0 and head != self.commit:
            raise NotUsable(f"{self.out or self.tree} was built from {self.commit[:10]}, {pmdk} is at {head[:10]}")


def without_lib_objects(sources: list[Path], objs: list[Path]) -> list[Path]:
    """SOURCES less those the library's objects already hold (PMDK's unittest library compiles
    core/util.c, core/os_posix.c... which libpmemobj holds too: linked twice, they clash)."""
    have = {o.stem for o in objs}
    return [s for s in sources if s.stem not in have]
