"""harness/check/base_pool.py: the pool a --pmdk structure's histories start from is made once per
driver and pool size, untraced, kept beside the driver (the same bytes for every later run, and a
random part made by creation stays the same), made again for a rebuilt driver (the old removed),
and a driver whose create fails ends with a one-line SetupError naming its last words."""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from crashcheck.harness.check import base_pool
from crashcheck.harness.core.errors import SetupError

# a stand-in driver: `run --pool P --create --size N --results R HISTORY` makes P of N random bytes
DRIVER = """#!/bin/sh
[ -n "$CRASHCHECK_TRACE" ] && { echo "traced" >&2; exit 3; }
pool= size= results=
while [ $# -gt 1 ]; do
  case "$1" in --pool) pool=$2; shift;; --size) size=$2; shift;; --results) results=$2; shift;; esac
  shift
done
FAIL
head -c "$size" /dev/urandom > "$pool"
printf '!ready\\n!end 0\\n' > "$results"
"""


def _session(tmp_path, fail: str = "") -> SimpleNamespace:
    driver = tmp_path / "build" / "driver"
    driver.parent.mkdir(exist_ok=True)
    driver.write_text(DRIVER.replace("FAIL", fail))
    driver.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return SimpleNamespace(driver=driver, workdir=work, settings=SimpleNamespace(pool_size=4096),
                           structure=SimpleNamespace(name="fake", pmdk_library=True))


def test_the_pool_is_made_once_untraced_and_kept_beside_the_driver(tmp_path, monkeypatch):
    monkeypatch.setenv("CRASHCHECK_TRACE", str(tmp_path / "t"))     # ours: never the driver's
    s = _session(tmp_path)
    assert base_pool.wanted(s)
    first = base_pool.base_pool(s)
    assert first.parent == s.driver.parent and first.stat().st_size == 4096
    made = first.read_bytes()
    base_pool.copy_to(s, tmp_path / "a")
    base_pool.copy_to(s, tmp_path / "b")
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes() == made
    assert not list(s.driver.parent.glob("*.tmp"))
    # another pool size of the same build is a pool of its own; both stay
    s.settings.pool_size = 8192
    assert base_pool.base_pool(s).stat().st_size == 8192 and first.exists()
    # a rebuilt driver makes a new pool, and the old build's go
    s.settings.pool_size = 4096
    os.utime(s.driver, ns=(1, 1))
    again = base_pool.base_pool(s)
    assert again != first and not first.exists() and again.read_bytes() != made
    assert len(list(s.driver.parent.glob(".driver.pool-*"))) == 1


def test_a_create_that_fails_is_one_line(tmp_path):
    s = _session(tmp_path, fail='echo "fake: pool too small" >&2; exit 2')
    with pytest.raises(SetupError) as e:
        base_pool.base_pool(s)
    assert str(e.value) == "the pool of fake could not be made (exited with status 2): fake: pool too small"
    assert not list(s.driver.parent.glob(".driver.pool-*"))
