"""`crashcheck init NAME --lang c|c++`: start an adapter for a user's structure.

Owns the command line of writing the adapter skeleton (harness/target/skeleton.py) into the
current folder or --out, never over an existing file, and saying what to run next.
"""
from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.target import skeleton, structures


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("init", help="write an adapter skeleton for your own structure (then fill it in "
                                    "and run crashcheck build)")
    p.add_argument("name", help="the structure's name (ASCII letters, digits, - and _; at most 64 characters)")
    p.add_argument("--lang", required=True, choices=skeleton.LANGS,
                   help="the adapter's language: c (adapter.c) or c++ (adapter.cpp)")
    p.add_argument("--out", metavar="DIR", help="the folder to write into (default: the current folder)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    name = args.name
    if not structures.STRUCTURE_NAME.match(name):
        raise UsageError(f"structure name {name[:40]!r}{'...' if len(name) > 40 else ''}: use ASCII "
                         f"letters, digits, - and _ (starting with a letter or digit), at most "
                         f"{structures.NAME_MAX} characters")
    if name in structures.builtin_names():
        raise UsageError(f"{name!r} is a built-in structure; choose another name")
    folder = Path(args.out).expanduser() if args.out else Path.cwd()
    path = folder / skeleton.adapter_file(args.lang)
    if path.exists() or path.is_symlink():
        raise UsageError(f"{path}: already exists; crashcheck init never overwrites a file (move it away, "
                         "or write elsewhere with --out DIR)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        # O_EXCL: a file that appeared since the check above is not overwritten either
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w") as f:
            f.write(skeleton.adapter_text(name, args.lang))
    except FileExistsError:
        raise UsageError(f"{path}: already exists; crashcheck init never overwrites a file") from None
    except OSError as exc:
        raise UsageError(f"{path}: cannot write it ({exc.strerror})") from None
    shown = shlex.quote(os.path.relpath(path)) if not args.out else shlex.quote(str(path))
    print(f"wrote {shown}: the adapter of {name}; its operations, dump, check and reachable stop the "
          "run with \"fill in ...\" until you write them")
    print("next:")
    print(f"  1. fill in {shown} (docs/trees.md \"A user's structure\", docs/walkthrough.md)")
    print(f"  2. crashcheck build {name} YOUR_SOURCES_AND_HEADERS... --adapter {shown} --pm-malloc")
    print(f"  3. crashcheck fuzz {name} --examples 16")
    return 0
