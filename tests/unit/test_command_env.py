"""The environment of a judged image's commands (harness/check/program_check.py command_env):
glibc's malloc on huge pages with a 32 MiB heap step, which takes most of the page faults out of
a checker that mallocs megabytes (libpmemobj's open), and a GLIBC_TUNABLES of the user's own,
even empty, left as it is."""
from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from crashcheck.harness.check.program_check import MALLOC_TUNABLES, command_env
from crashcheck.harness.target.program import program_env

# 16 MiB in 1,024 mallocs of 16 KiB, each touched: libpmemobj's open does about this
MALLOCS = "b = [bytearray(16384) for _ in range(1024)]"


def _faults(env: dict[str, str]) -> int:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    subprocess.run([sys.executable, "-S", "-c", MALLOCS], env=env, check=True)
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before


def test_the_tunables_unless_the_user_set_them(monkeypatch):
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    assert command_env({"PMREORDER_MARKERS": "a"})["GLIBC_TUNABLES"] == MALLOC_TUNABLES
    assert command_env({})["PMEM_IS_PMEM_FORCE"] == "1"
    assert "GLIBC_TUNABLES" not in program_env({})      # the traced run is left as it was
    monkeypatch.setenv("GLIBC_TUNABLES", "")
    assert command_env({})["GLIBC_TUNABLES"] == ""


THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


@pytest.mark.skipif(not THP.is_file() or "[never]" in THP.read_text(), reason="no transparent huge pages here")
def test_a_command_that_mallocs_megabytes_faults_far_less(monkeypatch):
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    plain = min(_faults(program_env({})) for _ in range(3))
    tuned = min(_faults(command_env({})) for _ in range(3))
    assert tuned * 2 < plain, (tuned, plain)
