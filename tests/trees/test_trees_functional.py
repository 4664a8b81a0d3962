"""Functional tests of every built tree (build/trees/*/driver-native): random histories against a
Python dict, no crash; plus the driver's user errors and the check JSON of a clean pool.

Table-driven: each tree found by `make -s trees` runs every case. A case is a seeded history
generator; the driver's result lines must equal the model's line for line, and `check` on the
final pool must report a recovered, violation-free, leak-free tree whose dump is the model.
"""
from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Callable

import pytest

from dict_model import Model, check_pool
from treeutil import ROOT, TREES_DIR, U64, catalog, run_driver, shared_folders


def tree_names() -> list[str]:
    """Trees with an adapter and 8-byte integer keys (and so 8-byte values), the shape these tests generate
    (known before the build, so parametrisation works on a fresh clone). Trees of another shape
    (HART: byte-string keys, 16-byte values) have functional tests of their own."""
    return sorted(p.parent.name for p in (ROOT / "trees").glob("*/adapter.c")
                  if "CC_KEYS_U64" in p.read_text())


def random_history(rng: random.Random, keys: Callable[[], int], n: int, deletes: float = 0.2) -> list[str]:
    ops = []
    for _ in range(n):
        r = rng.random()
        k = keys()
        v = rng.randrange(0, U64)
        if r < 0.45:
            ops.append(f"insert {k} {v}")
        elif r < 0.55:
            ops.append(f"update {k} {v}")
        elif r < 0.55 + deletes:
            ops.append(f"delete {k}")
        elif r < 0.95:
            ops.append(f"lookup {k}")
        else:
            ops.append(f"scan {k} {rng.randrange(0, 8)}")
    return ops


def small_keys(rng: random.Random) -> Callable[[], int]:
    return lambda: rng.randrange(0, 64)


def sparse_keys(rng: random.Random) -> Callable[[], int]:
    pool = [rng.randrange(0, U64) for _ in range(150)]
    return lambda: rng.choice(pool)


def low_nibble_keys(rng: random.Random) -> Callable[[], int]:
    """Keys that differ only in their last nibbles: the longest compressed paths."""
    base = rng.randrange(0, U64) & ~0xFFF
    return lambda: base | rng.choice([rng.randrange(0, 16), rng.randrange(0, 0x1000)])


def high_nibble_keys(rng: random.Random) -> Callable[[], int]:
    """Keys that differ only in their first nibbles: splits right below the root."""
    low = rng.randrange(0, 1 << 52)
    return lambda: (rng.randrange(0, 0x1000) << 52) | low


def mixed_keys(rng: random.Random) -> Callable[[], int]:
    gens = [small_keys(rng), sparse_keys(rng), low_nibble_keys(rng), high_nibble_keys(rng)]
    return lambda: rng.choice(gens)()


def drain(ops: list[str], model_keys: list[str]) -> list[str]:
    """Delete everything, in the order given, then look up and scan the empty tree."""
    return ops + [f"delete {k}" for k in model_keys] + ["scan 0 5", f"lookup {model_keys[0] if model_keys else 0}"]


CASES: dict[str, tuple[Callable[[random.Random], Callable[[], int]], int]] = {
    "small": (small_keys, 400),
    "sparse": (sparse_keys, 400),
    "low-nibbles": (low_nibble_keys, 400),
    "high-nibbles": (high_nibble_keys, 400),
    "mixed-long": (mixed_keys, 5000),
}


@pytest.mark.parametrize("tree", tree_names())
@pytest.mark.parametrize("case", sorted(CASES))
def test_random_history_matches_dict(trees_built, tmp_path, tree, case):
    driver = TREES_DIR / tree / "driver-native"
    make_keys, n = CASES[case]
    rng = random.Random(f"{tree}-{case}")
    ops = random_history(rng, make_keys(rng), n)
    model = Model()
    expected = [model.apply(line) for line in ops]
    pool = tmp_path / "pool"
    res = run_driver(driver, ["run", "--pool", str(pool), "--create", "--size", "16m", "--dump"], "\n".join(ops))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    got, dump = lines[:-1], lines[-1]
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"op {i} ({ops[i]}): driver said {g!r}, model {e!r}"
    assert len(got) == len(expected)
    assert dump == model.dump_line()
    result = check_pool(driver, pool, model)
    assert result["recover_status"] == 0
    assert len(result["allocated"]) >= len(model.data)  # at least a leaf or value per key

    # continue on the same pool: delete everything, the pool must end empty
    rest = drain([], sorted(model.keys(), key=lambda k: rng.random()))
    res = run_driver(driver, ["run", "--pool", str(pool)], "\n".join(rest))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == [model.apply(line) for line in rest]
    check_pool(driver, pool, model)  # empty, and whatever stays allocated is reachable


@pytest.mark.parametrize("tree", tree_names())
def test_scan_is_ordered_and_bounded(trees_built, tmp_path, tree):
    driver = TREES_DIR / tree / "driver-native"
    keys = [1, 2, 15, 16, 17, 255, 256, 4096, 1 << 32, (1 << 32) + 1, 1 << 60, U64 - 1, U64]
    ops = [f"insert {k} {i}" for i, k in enumerate(keys)]
    probes = [0, 1, 3, 16, 18, 300, (1 << 32) + 2, U64, 1 << 63]
    ops += [f"scan {p} {c}" for p in probes for c in (0, 1, 3, 100)]
    model = Model()
    expected = [model.apply(line) for line in ops]
    res = run_driver(driver, ["run", "--pool", str(tmp_path / "p"), "--create", "--size", "4m"], "\n".join(ops))
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == expected


@pytest.mark.parametrize("tree", tree_names())
def test_info(trees_built, tree):
    res = run_driver(TREES_DIR / tree / "driver-native", ["info"])
    assert res.returncode == 0
    info = json.loads(res.stdout)
    assert info["name"] == tree
    assert info["key_kind"] in ("u64", "bytes")
    assert info["value_size"] == 8


def test_no_tree_includes_another_folders_files():
    """Shared code is named in shared.txt and compiled per tree, never pulled in by a relative include."""
    offenders = [f"{p.relative_to(ROOT)}: {line.strip()}" for p in sorted((ROOT / "trees").glob("*/*.[ch]"))
                 for line in p.read_text().splitlines() if line.lstrip().startswith("#include") and "../" in line]
    assert offenders == []
    for tree in sorted(p.parent.name for p in (ROOT / "trees").glob("*/adapter.c")):
        for d in shared_folders(tree):
            assert not (ROOT / "trees" / d / "adapter.c").exists() and list((ROOT / "trees" / d).glob("*.c")), d


def test_a_change_in_shared_code_rebuilds_every_driver_of_the_trees_naming_it(trees_built):
    """`make -n -W <engine file> trees`: every driver of WOART and ART+CoW (every seeded bug's too) is
    linked again, and no other tree's; the engine's sources are compiled again with the tree's own
    flags, for a seeded bug whose define the changed file names with that -D too, and no other
    tree's file is (trees/build.mk compiles each file once per flavour and links the objects)."""
    users = sorted(p.parent.name for p in (ROOT / "trees").glob("*/shared.txt") if "art_engine" in shared_folders(p.parent.name))
    assert users == ["artcow", "woart"]
    engine_c = sorted(p.name for p in (ROOT / "trees" / "art_engine").glob("*.c"))
    for changed in ("art_nodes.h", "art_tree.c"):
        res = subprocess.run(["make", "-n", "-W", f"trees/art_engine/{changed}", "trees"], cwd=ROOT,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        outputs = {line.split(" -o ")[1].split()[0]: line for line in res.stdout.splitlines() if " -o build/" in line}
        links = {t: line for t, line in outputs.items() if t.startswith("build/trees/")}
        compiles = {t: line for t, line in outputs.items() if t.startswith("build/trees-obj/")}
        assert set(outputs) == set(links) | set(compiles), outputs
        # every entry of bugs.json is a driver, its many-bug variants too (trees/build.mk)
        want = {f"build/trees/{t}/{d}" for t in users for d in ["driver", "driver-native"] + [
            f"driver-bug-{b['name']}" for b in json.loads((ROOT / "trees" / t / "bugs.json").read_text())]}
        assert set(links) == want, changed
        for target, line in links.items():
            tree, binary = target.split("/")[2:]
            objs = f"build/trees-obj/{tree}/"
            assert f"{objs}native/trees/{tree}/adapter.o" in line if binary == "driver-native" else (
                "/trees/" + tree + "/adapter.o" in line), line
            assert "trees/art_engine/art_nodes.o" in line and "trees/common/driver.o" in line, line
            assert not any(f"build/trees-obj/{t}/" in line for t in users if t != tree), line
        for target, line in compiles.items():
            tree, where = target.split("/")[2:4]
            # a header may be included by any of the tree's files: those are compiled again too
            own = " -c trees/art_engine/" in line or (changed.endswith(".h") and f" -c trees/{tree}/" in line)
            assert tree in users and "-Itrees/art_engine" in line and own, line
            bug = where.removeprefix("bug-") if where.startswith("bug-") else None
            if bug:
                # a seeded bug's define; a many-bug variant's, every define of the bugs it names
                entry = next(b for b in json.loads((ROOT / "trees" / tree / "bugs.json").read_text())
                             if b["name"] == bug)
                defines = {b["name"]: b["define"] for b in catalog(tree)}
                for define in [defines[n] for n in entry["bugs"]] if "bugs" in entry else [entry["define"]]:
                    assert f" -D{define} " in line, line
        # the changed file (a header: every engine source) in both flavours of both trees
        sources = engine_c if changed.endswith(".h") else [changed]
        for tree in users:
            for flavour in ("native", "traced"):
                for src in sources:
                    assert f"build/trees-obj/{tree}/{flavour}/trees/art_engine/{src[:-2]}.o" in compiles, (tree, src)
            for bug in catalog(tree):
                text = (ROOT / "trees" / "art_engine" / changed).read_text()
                if bug["define"] in text:
                    assert any(f"build/trees-obj/{tree}/bug-{bug['name']}/" in t for t in compiles), bug


def test_a_seeded_bug_recompiles_only_the_files_naming_its_define(trees_built):
    """A seeded-bug driver reuses the traced objects of the files its -D cannot change: only the
    files whose text names the define are compiled with it (all of the tree's when a header does)."""
    res = subprocess.run(["make", "-n", "-B", "build/trees/wort/driver-bug-no-flush-link",
                          "build/trees/heart/driver-bug-pack-keybyte-7bit"], cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    with_d = sorted(line.split(" -c ")[1].split()[0] for line in res.stdout.splitlines() if " -DBUG_" in line)
    heart = sorted(f"trees/heart/{p.name}" for p in (ROOT / "trees" / "heart").glob("*.c"))
    assert with_d == sorted(["trees/wort/wort.c", *heart]), with_d     # heart's define is in heart_internal.h
    link = next(line for line in res.stdout.splitlines() if "-o build/trees/wort/driver-bug-no-flush-link" in line)
    assert "build/trees-obj/wort/bug-no-flush-link/traced/trees/wort/wort.o" in link
    assert "build/trees-obj/wort/traced/trees/wort/wort_recover.o" in link, link


USER_ERRORS = [
    (["run", "--pool", "{missing}"], "lookup 1", "{missing}"),
    (["run", "--pool", "{pool}", "--create"], "insert 1 2\nfrobnicate 3\n", "line 2"),
    (["run", "--pool", "{pool}", "--create"], "insert 1\n", "line 1"),
    (["run", "--pool", "{pool}", "--create"], "insert 1 x:0102\n", "line 1"),
    (["run", "--pool", "{pool}", "--create"], "# c\n\ninsert 184467440737095516160 1\n", "line 3"),
    (["run", "--pool", "{pool}", "--create"], "scan 1 many\n", "line 1"),
    (["run", "--pool", "{pool}", "--create", "--size", "4096"], "lookup 1\n", "too small"),
    (["run", "--pool", "{pool}", "--create", "--size", "12q"], "", "bad size"),
    (["run"], "", "--pool"),
    (["run", "--pool", "{pool}", "--bogus"], "", "--bogus"),
    (["check", "--pool", "{missing}"], "", "{missing}"),
    (["frob"], "", "unknown command"),
    ([], "", "usage"),
]


@pytest.mark.parametrize("tree", tree_names())
@pytest.mark.parametrize("args,stdin,needle", USER_ERRORS)
def test_driver_user_errors(trees_built, tmp_path, tree, args, stdin, needle):
    names = {"missing": str(tmp_path / "no-such-pool"), "pool": str(tmp_path / "pool")}
    res = run_driver(TREES_DIR / tree / "driver-native", [a.format(**names) for a in args], stdin)
    assert res.returncode == 2, (res.stdout, res.stderr)
    err = res.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert needle.format(**names) in err
    assert "Traceback" not in err and res.stdout == ""


@pytest.mark.parametrize("tree", tree_names())
def test_run_on_unformatted_pool_is_a_user_error(trees_built, tmp_path, tree):
    pool = tmp_path / "zeros"
    pool.write_bytes(bytes(1 << 20))
    res = run_driver(TREES_DIR / tree / "driver-native", ["run", "--pool", str(pool)], "lookup 1\n")
    assert res.returncode == 2 and "no formatted pool" in res.stderr


@pytest.mark.parametrize("tree", tree_names())
def test_check_followup_and_image_untouched(trees_built, tmp_path, tree):
    driver = TREES_DIR / tree / "driver-native"
    pool = tmp_path / "pool"
    res = run_driver(driver, ["run", "--pool", str(pool), "--create", "--size", "2m"],
                     "insert 7 70\ninsert 8 80\ndelete 7\n")
    assert res.returncode == 0, res.stderr
    before = pool.read_bytes()
    follow = tmp_path / "follow"
    follow.write_text("lookup 8\ninsert 9 90\nscan 0 10\ndelete 8\nlookup 8\n")
    res = run_driver(driver, ["check", "--pool", str(pool), "--followup", str(follow)])
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["dump"] == [[(8).to_bytes(8, "big").hex(), (80).to_bytes(8, "little").hex()]]
    assert result["followup"] == ["value 80", "ok", "scan 8 80 9 90", "ok", "notfound"]
    assert pool.read_bytes() == before, "check must not write the image file"
    bad = tmp_path / "bad"
    bad.write_text("lookup\n")
    res = run_driver(driver, ["check", "--pool", str(pool), "--followup", str(bad)])
    assert res.returncode == 2 and "line 1" in res.stderr


@pytest.mark.parametrize("tree", tree_names())
def test_check_of_a_zero_image_is_not_recovered(trees_built, tmp_path, tree):
    pool = tmp_path / "zeros"
    pool.write_bytes(bytes(1 << 20))
    res = run_driver(TREES_DIR / tree / "driver-native", ["check", "--pool", str(pool)])
    assert res.returncode == 0, res.stderr
    result = json.loads(res.stdout)
    assert result["recovered"] is False and result["dump"] == [] and "error" in result


def runner_request(kind: int, ident: int, body: bytes) -> bytes:
    """One request of the checker runner's protocol (crashsim/runner/): head, body."""
    return kind.to_bytes(4, "little") + len(body).to_bytes(4, "little") + ident.to_bytes(8, "little") + body


@pytest.mark.parametrize("tree", tree_names())
def test_serve_checks_states_like_check(trees_built, tmp_path, tree):
    if not (ROOT / "crashsim" / "runner" / "runner.h").exists():
        pytest.skip("the checker runner is not in this checkout")
    driver = TREES_DIR / tree / "driver-native"
    pool = tmp_path / "pool"
    res = run_driver(driver, ["run", "--pool", str(pool), "--create", "--size", "2m"], "insert 7 70\ninsert 8 80\n")
    assert res.returncode == 0, res.stderr
    follow = b"lookup 8\ninsert 9 90\n"
    root_zero = (64).to_bytes(8, "little") + (8).to_bytes(4, "little") + bytes(8)  # empty the root pointer
    requests = (runner_request(1, 1, str(pool).encode())
                + runner_request(3, 2, len(follow).to_bytes(4, "little") + follow)
                + runner_request(3, 3, (0).to_bytes(4, "little") + root_zero)
                + runner_request(5, 4, b""))
    proc = subprocess.run([str(driver), "serve", "--size", "2m", "--timeout-ms", "5000"], input=requests,
                          capture_output=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    answers = [json.loads(line) for line in proc.stdout.decode().splitlines()]
    results = [a["result"] for a in answers if isinstance(a.get("result"), dict)]
    assert len(results) == 2, answers
    direct = json.loads(run_driver(driver, ["check", "--pool", str(pool)]).stdout)
    assert results[0]["dump"] == direct["dump"] and results[0]["allocated"] == direct["allocated"]
    assert results[0]["followup"] == ["value 80", "ok"]
    if tree == "wort":  # the root pointer is the first word of the root area for WORT
        assert results[1]["dump"] == [] and len(results[1]["unreachable"]) == len(direct["allocated"])
