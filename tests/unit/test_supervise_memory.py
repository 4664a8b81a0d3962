"""A supervised run is said to have run out of memory only on its own peak: Linux keeps a forked
child's resident high-water mark across exec, so a large parent (a long pytest or Dask worker)
made a plain crash of every driver it started read as 'ran out of memory'."""
from __future__ import annotations

import subprocess
import sys

import pytest

from cli_run import ROOT

# In a child of its own: the parent grows to 300 MiB resident, then runs a program that crashes
# at once under a 400 MiB limit (its inherited high-water mark alone passes half of it).
PROBE = """
import sys
from pathlib import Path
from crashcheck.harness.core.supervise import run_supervised
big = bytearray(300 << 20)
for i in range(0, len(big), 4096):
    big[i] = 1
if sys.argv[2] == "freed":     # resident now small, the peak stays (a vforked child inherits it)
    del big
end = run_supervised(["sh", "-c", "kill -SEGV $$"], env={"PATH": "/usr/bin:/bin"},
                     output=Path(sys.argv[1]), timeout_s=30, mem_bytes=272 << 20)   # limit 400 MiB with the headroom
print(end.status, end.maxrss_kb >> 10, end.inherited_kb >> 10, end.memory_exhausted, end.how())
"""


@pytest.mark.parametrize("parent", ["holding", "freed"])
def test_a_large_parent_does_not_make_a_crash_read_as_memory_exhausted(tmp_path, parent):
    res = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "out"), parent], capture_output=True,
                         text=True, timeout=120, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    status, maxrss_mib, inherited_mib, exhausted, how = res.stdout.split(" ", 4)
    assert status == "signal"
    assert int(maxrss_mib) >= 200          # the inherited mark is there: the case is real
    assert exhausted == "False" and how.strip() == "died of SIGSEGV (signal 11)"
