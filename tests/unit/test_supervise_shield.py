"""A supervised run's driver has crashcheck's shield (build/bin/crashcheck-shield) as its parent:
one exec that sets the limits and stands in for crashcheck when the driver kills its parent, the
run then reads as parent-killed. Without the shield, prlimit and timeout do the same."""
from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from crashcheck.harness.core import paths, supervise
from crashcheck.harness.core.supervise import run_supervised

ENV = {"PATH": "/usr/bin:/bin"}
SHIELD = paths.BUILD / "bin" / supervise.SHIELD


def run(tmp_path: Path, script: str, **kw) -> supervise.RunEnd:
    return run_supervised(["sh", "-c", script], env=ENV, output=tmp_path / "out", timeout_s=20, **kw)


def test_the_driver_runs_under_the_shield_with_the_limits(tmp_path):
    end = run(tmp_path, 'readlink /proc/$PPID/exe; ulimit -t; ulimit -c; ulimit -v; ulimit -f', mem_bytes=64 << 20)
    assert end.status == "ok", end.output
    exe, cpu, core, vmem_kb, fsize_blocks = end.output.split("\n")
    assert Path(exe) == SHIELD.resolve()
    assert (int(cpu), int(core)) == (22, 0)
    assert int(vmem_kb) << 10 == (64 << 20) + supervise.AS_HEADROOM
    assert int(fsize_blocks) * 512 == supervise.FSIZE_LIMIT


@pytest.mark.parametrize("shield", ["ours", "prlimit+timeout"])
def test_how_the_driver_ended_is_passed_on(tmp_path, monkeypatch, shield):
    if shield != "ours":
        monkeypatch.setattr(supervise, "_shield", lambda: None)
    # it kills its parent, goes on for a while (the shield is gone, crashcheck is not), then ends
    end = run(tmp_path, "kill -KILL $PPID; sleep 0.2; echo still here")
    assert end.status == "parent-killed", end.how()
    assert end.stray                       # the driver outlived its parent; the group was killed
    assert run(tmp_path, "kill -SEGV $$").signal == signal.SIGSEGV
    assert run(tmp_path, "exit 3").code == 3


def test_the_shield_is_only_a_backstop_behind_our_deadline(tmp_path):
    end = run_supervised([str(SHIELD), "0.2", "--", "sleep", "5"], env=ENV, output=tmp_path / "out", timeout_s=20)
    assert end.status == "signal" and end.signal == signal.SIGKILL and end.elapsed < 4
    end = run_supervised([str(SHIELD), "5", "bogus=1", "--", "true"], env=ENV, output=tmp_path / "out", timeout_s=20)
    assert end.code == 125 and "unknown limit" in end.output
    assert os.access(SHIELD, os.X_OK)
