"""`crashcheck build NAME SOURCES... --adapter ADAPTER.c`: put a user's own structure under test.

Owns the command line of putting a user's structure under test and what it registers: the sources,
the adapter (trees/common/cc_tree.h) and trees/common (driver, pool allocator) become
DIR/NAME/driver (traced), driver-native and, for every entry of a bugs.json beside the
adapter (or given with --bugs), driver-bug-<name> with -D<define>; harness/target/build_compile.py owns
the compiler commands (C and C++, --pm-malloc). DIR is --out, else ./crashcheck-builds of the
current folder: nothing is written into crashcheck's own folder, whose pass, runtime and runner
(structures.BUILD) it uses. A meta.json records where the catalog and
expectation file live, so every other command accepts NAME. A failed compile prints the
compiler's whole output, then one error line.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from crashcheck.harness.target import build_compile

from crashcheck.harness.target import structures
from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.render.report import write_atomic

ROOT = structures.ROOT


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("build", help="compile your own structure with the pass so every command accepts it")
    p.add_argument("name", help="the name to give it (ASCII letters, digits, - and _; at most 64 characters)")
    p.add_argument("sources", nargs="*",
                   help="the structure's C/C++ sources and headers (.h/.hpp: a header-only structure's "
                        "code is its own, for --pm-malloc and source sites); none if all is in the adapter")
    p.add_argument("--adapter", required=True,
                   help="the adapter file (C or C++) defining `cc_adapter` (see trees/common/cc_tree.h)")
    p.add_argument("--bugs", help="seeded-bug catalog (default: bugs.json beside the adapter, if any)")
    p.add_argument("--cflags", action="append", default=[],
                   help="extra compiler flags for the structure's sources and the adapter (never "
                        "crashcheck's own code: see --common-cflags): one flag (--cflags -DMY_OPTION) "
                        "or several in quotes (--cflags \"-DMY_OPTION -Iinclude\"); may be repeated")
    p.add_argument("--common-cflags", action="append", default=[],
                   help="extra compiler flags for crashcheck's own code compiled into the driver "
                        "(trees/common: driver, pool allocator), as --cflags; e.g. "
                        "-DCC_FLUSH=CC_FLUSH_CLWB (trees/common/persist.h)")
    p.add_argument("--ldflags", action="append", default=[],
                   help="extra link flags, as --cflags: the libraries the structure needs (--ldflags -lpmemobj)")
    p.add_argument("--pmdk", metavar="DIR",
                   help="link the traced drivers with the libpmem and libpmemobj that instrument/build-pmdk "
                        "built into DIR (an adapter on libpmemobj: crash points inside the library, its "
                        "stores at its lines; docs/tracing.md \"libpmemobj\"); give --ldflags -lpmemobj as "
                        "well (the native driver links that one: Debian's)")
    p.add_argument("--pm-malloc", action="store_true",
                   help="send the structure's malloc, calloc, realloc, free, posix_memalign, aligned_alloc, "
                        "memalign, valloc, pvalloc, _mm_malloc and C++ new/new[]/delete (in its sources "
                        "and the headers given, wherever they are compiled) to the pool allocator, each "
                        "allocation recorded with the line that called it (trees/common/pm_malloc.h); "
                        "not the adapter's own, nor the standard library's called from the adapter")
    p.add_argument("--out", metavar="DIR",
                   help=f"the folder of builds to write NAME/ into (default: ./{structures.USER_BUILDS} of the "
                        "current folder); other commands find it there, or through $CRASHCHECK_BUILDS "
                        "(docs/cli.md \"Where builds are\")")
    p.add_argument("--model", dest="model_file", metavar="FILE.py",
                   help="the reference model of a structure that is not an ordered map: a Python file "
                        "defining MODEL = crashcheck.specs.model.Model(...) named as the adapter's .model (docs/models.md)")
    p.set_defaults(func=run)


def _compile_all(plan: build_compile.Plan, out: Path, bugs: list) -> None:
    """Every driver of the structure into OUT: traced, native, one per seeded bug. The variants
    are independent compiles, one per core at a time; the first failure in catalog order is the
    one reported."""
    build_compile.syntax_check(plan)
    with build_compile.objects_dir(out) as d:
        work = Path(d)
        with ThreadPoolExecutor(max_workers=2) as pool:
            traced_f = pool.submit(build_compile.common_objects, plan, work, True)
            native_f = pool.submit(build_compile.common_objects, plan, work, False)
            traced, native = traced_f.result(), native_f.result()
        jobs = [(out / "driver", traced, True, []), (out / "driver-native", native, False, [])]
        jobs += [(out / f"driver-bug-{bug.name}", traced, True, list(bug.defines)) for bug in bugs]
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for done in [pool.submit(build_compile.build_variant, plan, o, common, work, t, defs)
                         for o, common, t, defs in jobs]:
                done.result()


def run(args: argparse.Namespace) -> int:
    name = args.name
    if not structures.STRUCTURE_NAME.match(name):
        raise UsageError(f"structure name {name[:40]!r}{'...' if len(name) > 40 else ''}: use ASCII "
                         f"letters, digits, - and _ (starting with a letter or digit), at most "
                         f"{structures.NAME_MAX} characters")
    if name in structures.builtin_names():
        raise UsageError(f"{name!r} is a built-in structure; choose another name")
    given = [Path(s).resolve() for s in args.sources]
    adapter = Path(args.adapter).resolve()
    for path in given + [adapter]:
        if not path.is_file():
            raise UsageError(f"{path}: no such source file")
        build_compile.language(path, headers=path != adapter)
    sources = [p for p in given if build_compile.language(p, headers=True) != "header"]
    headers = [p for p in given if p not in sources]
    bugs_path = Path(args.bugs).resolve() if args.bugs else adapter.parent / "bugs.json"
    if args.bugs and not bugs_path.exists():
        raise UsageError(f"{bugs_path}: no such bug catalog")
    bugs = structures.read_bugs(bugs_path)
    model_file = Path(args.model_file).resolve() if args.model_file else None
    if model_file is not None and not model_file.is_file():
        raise UsageError(f"{model_file}: no such model file")
    flags = {}
    for name_, texts in (("cflags", args.cflags), ("ldflags", args.ldflags),
                         ("common-cflags", args.common_cflags)):
        try:
            flags[name_] = [f for text in texts for f in shlex.split(text)]
        except ValueError as exc:
            raise UsageError(f"--{name_}: {exc}") from None
    cflags = flags["cflags"]
    pmdk = build_compile.check_pmdk(Path(args.pmdk)) if args.pmdk else None
    plan = build_compile.Plan(sources, adapter, cflags, pm_malloc=args.pm_malloc, ldflags=flags["ldflags"],
                              common_cflags=flags["common-cflags"], headers=headers, pmdk=pmdk)
    missing = build_compile.missing_tools(plan)
    if missing is None and not build_compile.runtime().exists():
        missing = "the runtime is not built; run scripts/setup first"
    if missing:
        raise UsageError(missing)
    out = (Path(args.out).expanduser() if args.out else Path.cwd() / structures.USER_BUILDS).resolve() / name
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out}: cannot make the build folder ({exc.strerror})") from None
    try:
        _compile_all(plan, out, bugs)
    except build_compile.BuildFailure as exc:
        # the compiler's own words, all of them, then the one line every error ends with (a
        # check made before the link, harness/target/link_check.py, has only its line)
        if not exc.diagnostics:
            raise UsageError(str(exc)) from None
        print(exc.diagnostics, file=sys.stderr)
        raise UsageError(f"{exc} (the compiler's messages are above)") from None
    for line in build_compile.missed_allocations(plan):
        print(f"crashcheck: warning: {line}", file=sys.stderr)
    # The model the adapter names must be one crashcheck knows, or the one --model gives; a
    # structure whose model cannot be had is not registered (no meta.json).
    structures._driver_info.cache_clear()
    probe = structures.Structure(name, adapter.parent, out, False, model_file=model_file)
    try:
        model = probe.model()
        if model.name == "ordered_map" and not {"insert", "lookup"} <= set(probe.map_ops):
            raise UsageError(f"{name}: a map needs at least insert and lookup (its adapter has "
                             f"{', '.join(probe.map_ops) or 'none'}); update, delete and scan may be NULL")
    except UsageError:
        (out / "meta.json").unlink(missing_ok=True)
        raise
    meta = {"name": name, "folder": str(adapter.parent), "sources": [str(s) for s in sources],
            "headers": [str(h) for h in headers],
            "adapter": str(adapter), "cflags": shlex.join(cflags), "ldflags": shlex.join(flags["ldflags"]),
            "common_cflags": shlex.join(flags["common-cflags"]),
            "pm_malloc": args.pm_malloc, "pmdk": str(pmdk) if pmdk else None,
            "bugs": str(bugs_path) if bugs else None,
            "model_file": str(model_file) if model_file else None}
    write_atomic(out / "meta.json", json.dumps(meta, indent=2) + "\n")
    print(f"built {name} ({model.name} model): {out}/driver (traced), driver-native"
          + (f", {len(bugs)} seeded-bug variant{'s' if len(bugs) != 1 else ''}" if bugs else ""))
    return 0
