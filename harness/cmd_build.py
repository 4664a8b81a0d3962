"""`crashcheck build NAME SOURCES... --adapter ADAPTER.c`: put a user's own structure under test.

Owns compiling a user's structure into drivers like the built-in trees': the sources, the adapter
(trees/common/cc_tree.h) and trees/common (driver, pool allocator) are compiled with crashcheck-cc
into build/user/NAME/driver, natively into driver-native, and, for every entry of a bugs.json
beside the adapter (or given with --bugs), into driver-bug-<name> with -D<define>. A meta.json
records where the catalog and expectation file live, so every other command accepts NAME.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from harness import structures
from harness.errors import UsageError
from harness.report import write_atomic

ROOT = structures.ROOT


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="compile your own structure with the pass so every command accepts it")
    p.add_argument("name", help="the name to give it (letters, digits, - and _)")
    p.add_argument("sources", nargs="*", help="the structure's C/C++ sources (none if all is in the adapter)")
    p.add_argument("--adapter", required=True, help="the adapter file defining `cc_adapter` (see trees/common/cc_tree.h)")
    p.add_argument("--bugs", help="seeded-bug catalog (default: bugs.json beside the adapter, if any)")
    p.add_argument("--cflags", default="", help="extra compiler flags, e.g. \"-DMY_OPTION -Iinclude\"")
    p.add_argument("--model", dest="model_file", metavar="FILE.py",
                   help="the reference model of a structure that is not an ordered map: a Python file "
                        "defining MODEL = specs.model.Model(...) named as the adapter's .model (docs/models.md)")
    p.set_defaults(func=run)


def _compile(cc: list[str], out: Path, args: list[str]) -> None:
    # Linked under a private name and renamed into place: a run of the previous driver (or another
    # build of the same structure at the same time) never sees a half-written executable.
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        res = subprocess.run(cc + args + ["-o", str(tmp)], capture_output=True, text=True)
        if res.returncode == 0:
            os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    if res.returncode != 0:
        lines = (res.stderr or res.stdout).strip().splitlines()
        first = next((line for line in lines if "error" in line), lines[0] if lines else "")
        raise UsageError(f"compiling {out.name} failed: {first}")


def run(args: argparse.Namespace) -> int:
    name = args.name
    if not name.replace("-", "").replace("_", "").isalnum():
        raise UsageError(f"structure name {name!r}: use letters, digits, - and _")
    if name in structures.builtin_names():
        raise UsageError(f"{name!r} is a built-in structure; choose another name")
    sources = [Path(s).resolve() for s in args.sources]
    adapter = Path(args.adapter).resolve()
    for path in sources + [adapter]:
        if not path.is_file():
            raise UsageError(f"{path}: no such source file")
    bugs_path = Path(args.bugs).resolve() if args.bugs else adapter.parent / "bugs.json"
    if args.bugs and not bugs_path.exists():
        raise UsageError(f"{bugs_path}: no such bug catalog")
    bugs = structures.read_bugs(bugs_path)
    model_file = Path(args.model_file).resolve() if args.model_file else None
    if model_file is not None and not model_file.is_file():
        raise UsageError(f"{model_file}: no such model file")
    clang = shutil.which("clang-16")
    wrapper = ROOT / "instrument" / "bin" / "crashcheck-cc"
    runtime = structures.BUILD / "libcrashcheck_rt.a"
    if clang is None or not runtime.exists():
        raise UsageError("clang-16 or the runtime is missing; run scripts/setup first")
    common = sorted(str(p) for p in (ROOT / "trees" / "common").glob("*.c"))
    flags = ["-O2", "-g", "-std=gnu11", f"-I{ROOT}/trees/common", f"-I{ROOT}/instrument/include",
             f"-I{ROOT}/crashsim/runner", f"-I{adapter.parent}"] + args.cflags.split()
    srcs = [str(s) for s in sources] + [str(adapter)] + common
    out = structures.BUILD / "user" / name
    out.mkdir(parents=True, exist_ok=True)
    jobs = [([str(wrapper)], out / "driver", flags + srcs),
            ([clang], out / "driver-native", flags + srcs + [str(runtime), "-lpthread", "-ldl"])]
    jobs += [([str(wrapper)], out / f"driver-bug-{bug.name}", flags + [f"-D{bug.define}"] + srcs) for bug in bugs]
    # the variants are independent compiles: one per core at a time (a catalog of ten bugs took
    # ten times one compile); the first failure, in catalog order, is the one reported
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for done in [pool.submit(_compile, *job) for job in jobs]:
            done.result()
    # The model the adapter names must be one crashcheck knows, or the one --model gives; a
    # structure whose model cannot be had is not registered (no meta.json).
    structures._driver_info.cache_clear()
    probe = structures.Structure(name, adapter.parent, out, False, model_file=model_file)
    try:
        model = probe.model()
    except UsageError:
        (out / "meta.json").unlink(missing_ok=True)
        raise
    meta = {"name": name, "folder": str(adapter.parent), "sources": [str(s) for s in sources],
            "adapter": str(adapter), "cflags": args.cflags, "bugs": str(bugs_path) if bugs else None,
            "model_file": str(model_file) if model_file else None}
    write_atomic(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    print(f"built {name} ({model.name} model): {out}/driver (traced), driver-native"
          + (f", {len(bugs)} seeded-bug variant{'s' if len(bugs) != 1 else ''}" if bugs else ""))
    return 0
