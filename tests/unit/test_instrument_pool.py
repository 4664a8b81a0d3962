"""The runtime's pool errors: crashcheck_pool_open / crashcheck_register_pm say why they failed.

Driven by tests/corpus/support/pool_errors.c, which prints "ok ADDRESS" or
"error: <crashcheck_last_error()>". Each case runs with and without tracing: the errors must not
depend on it; and with the runtime built by the default LLVM and by a second one (llvm19).
"""
from __future__ import annotations

import pytest

import llvm_builds
from corpus import corpuslib

ADDR = 0x6A0000000000     # away from the default, so the cases cannot collide with it
SIZE = 1 << 20


@pytest.fixture(scope="session", params=[None, *llvm_builds.OTHER],
                ids=["default", *(f"llvm{v}" for v in llvm_builds.OTHER)])
def pool_errors(request, instrument_built, tmp_path_factory):
    """pool_errors built with the default pass and runtime, and with another LLVM's (tests/llvm_builds.py)."""
    if request.param is None:
        return corpuslib.build_support("pool_errors", tmp_path_factory.getbasetemp() / "support-builds")
    build = llvm_builds.build(request.param)
    return corpuslib.build_support("pool_errors", tmp_path_factory.getbasetemp() / f"support-builds-llvm{request.param}",
                                   build)


def run(exe, work, *args, trace=True, env=None):
    res, _ = corpuslib.run(exe, work, *args, trace=trace, env=env)
    return res.returncode, res.stdout.strip()


@pytest.fixture(params=[True, False], ids=["traced", "untraced"])
def traced(request):
    return request.param


def test_create_then_reopen(pool_errors, tmp_path, traced):
    assert run(pool_errors, tmp_path, "create", str(SIZE), hex(ADDR), trace=traced) == (0, f"ok {ADDR:#x}")
    assert (tmp_path / "pool").stat().st_size == SIZE
    # The file now exists: opening without CREATE works, for its size or less.
    assert run(pool_errors, tmp_path, "open", str(SIZE), hex(ADDR), trace=traced) == (0, f"ok {ADDR:#x}")
    assert run(pool_errors, tmp_path, "open", "4096", hex(ADDR), trace=traced) == (0, f"ok {ADDR:#x}")


def test_default_address_and_environment(pool_errors, tmp_path, traced):
    assert run(pool_errors, tmp_path, "create", str(SIZE), trace=traced) == (
        0, f"ok {corpuslib.DEFAULT_POOL_ADDR:#x}")
    assert run(pool_errors, tmp_path, "create", str(SIZE), trace=traced,
               env={"CRASHCHECK_POOL_ADDR": hex(ADDR)}) == (0, f"ok {ADDR:#x}")


def test_pool_file_missing(pool_errors, tmp_path, traced):
    pool = tmp_path / "pool"
    assert run(pool_errors, tmp_path, "open", str(SIZE), hex(ADDR), trace=traced) == (
        1, f"error: cannot open pool file {pool}: No such file or directory")
    assert not pool.exists()


def test_pool_file_smaller_than_requested(pool_errors, tmp_path, traced):
    pool = tmp_path / "pool"
    pool.write_bytes(b"\0" * 8192)
    assert run(pool_errors, tmp_path, "open", str(SIZE), hex(ADDR), trace=traced) == (
        1, f"error: pool file {pool} has 8192 bytes, smaller than the {SIZE} expected")
    assert pool.stat().st_size == 8192, "a failed open must not grow the file"


def test_address_already_mapped(pool_errors, tmp_path, traced):
    # pool_errors maps one page at the last page of the pool's range, then opens the pool there.
    code, out = run(pool_errors, tmp_path, "mapped", str(SIZE), hex(ADDR), trace=traced)
    assert (code, out) == (
        1, f"error: cannot map pool {tmp_path / 'pool'} at {ADDR:#x}: address range already mapped "
           "(choose another with CRASHCHECK_POOL_ADDR)")


def test_bad_size(pool_errors, tmp_path, traced):
    assert run(pool_errors, tmp_path, "create", "1000", hex(ADDR), trace=traced) == (
        1, "error: pool size 1000 is not a positive multiple of 4096")
    assert run(pool_errors, tmp_path, "create", "0", hex(ADDR), trace=traced) == (
        1, "error: pool size 0 is not a positive multiple of 4096")


def test_register_overlapping_region(pool_errors, tmp_path, traced):
    code, out = run(pool_errors, tmp_path, "overlap", str(SIZE), hex(ADDR), trace=traced)
    assert code == 1
    assert out == (f"error: PM region {ADDR + SIZE - 4096:#x}+8192 overlaps registered region "
                   f"{ADDR:#x}+{SIZE}")
