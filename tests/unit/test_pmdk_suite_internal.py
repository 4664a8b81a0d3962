"""bench/pmdk-suite/internal_lib.py without a PMDK tree: which programs link libpmemobj's
internals, the functions they mock, a build-pmdk output's objects, and the unittest sources the
library already holds."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[2] / "bench" / "pmdk-suite" / "internal_lib.py"
spec = importlib.util.spec_from_file_location("pmdk_suite_internal_lib", PATH)
lib = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = lib
spec.loader.exec_module(lib)


def test_internal_lib_read_from_the_makefile(tmp_path):
    (tmp_path / "Makefile").write_text("TARGET = x\n# required for mocks\nLIBPMEMOBJ=internal-debug\n")
    assert lib.internal_lib(tmp_path) == "libpmemobj"
    (tmp_path / "Makefile").write_text("LIBPMEM=internal-nondebug\n")
    assert lib.internal_lib(tmp_path) == "libpmem"
    (tmp_path / "Makefile").write_text("LIBPMEMOBJ=y\n# LIBPMEMOBJ=internal-debug in a comment\n")
    assert lib.internal_lib(tmp_path) is None
    assert lib.internal_lib(tmp_path / "none") is None


def test_mocked_functions(tmp_path):
    src = tmp_path / "t.c"
    src.write_text("FUNC_MOCK(ulog_store, void, int a)\nFUNC_MOCK_END\n"
                   "FUNC_MOCK_NONSTATIC(ulog_process, void)\n/* FUNC_MOCK(ulog_store again) */\n"
                   "x = FUNC_MOCK(not_at_line_start);\n")
    assert lib.mocked(src) == ["ulog_store", "ulog_process"]


def _git_repo(path: Path) -> Path:
    """PATH made a git repository of one empty commit."""
    path.mkdir(exist_ok=True)
    git = ["git", "-C", str(path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "x"], check=True)
    return path


def _build(tmp_path, objs=("ulog", "util", "libpmemobj_all", "libpmemobj_unscoped")):
    tree = tmp_path / "tree"
    folder = tree / "src" / "nondebug" / "libpmemobj"
    folder.mkdir(parents=True)
    for o in objs:
        (folder / f"{o}.o").write_bytes(b"")
    out = tmp_path / "out"
    out.mkdir()
    (out / "pmdk.env").write_text(f"tree={tree}\ncommit=abc123\ncflags=-Wno-error\n")
    return out


def test_build_objects_without_the_merged_ones(tmp_path):
    b = lib.PmdkBuild.read(_build(tmp_path))
    assert b.commit == "abc123"
    assert [o.name for o in b.objects("libpmemobj")] == ["ulog.o", "util.o"]
    with pytest.raises(lib.NotUsable, match="no object files of libpmem in"):
        b.objects("libpmem")
    with pytest.raises(lib.NotUsable, match="not an instrument/build-pmdk output"):
        lib.PmdkBuild.read(tmp_path)


def test_build_of_another_commit_refused(tmp_path):
    b = lib.PmdkBuild.read(_build(tmp_path))
    repo = _git_repo(tmp_path / "pmdk")
    with pytest.raises(lib.NotUsable, match="was built from abc123, .* is at"):
        b.check_commit(repo)
    b.commit = lib.PmdkBuild.plain(repo).commit
    b.check_commit(repo)                       # the same commit: usable


def test_unittest_sources_the_library_holds_dropped():
    srcs = [Path("test/x/x.c"), Path("core/util.c"), Path("test/unittest/ut.c"), Path("core/alloc.c")]
    objs = [Path("o/util.o"), Path("o/alloc.o"), Path("o/ulog.o")]
    assert lib.without_lib_objects(srcs, objs) == [Path("test/x/x.c"), Path("test/unittest/ut.c")]


def test_plain_tree(tmp_path):
    with pytest.raises(lib.NotUsable, match="not a git clone of PMDK"):
        lib.PmdkBuild.plain(tmp_path)
    b = lib.PmdkBuild.plain(_git_repo(tmp_path))
    assert b.out is None and len(b.commit) == 40
    with pytest.raises(lib.NotUsable, match=r"build the tree's libraries first \(make -C src/libpmem\)"):
        b.archive("libpmem")
    (tmp_path / "src" / "nondebug").mkdir(parents=True)
    (tmp_path / "src" / "nondebug" / "libpmem.a").write_bytes(b"!<arch>\n")
    assert b.archive("libpmem").name == "libpmem.a"
    b.check_commit(tmp_path)
