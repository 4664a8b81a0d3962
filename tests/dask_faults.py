"""A Dask worker preload for tests/e2e/test_dask_trust.py: makes the units of a run misbehave the way
a real cluster can, chosen by $CRASHCHECK_TEST_DASK_FAULT. Loaded into every worker of a
`--dask local:N` run through Dask's own setting ($DASK_DISTRIBUTED__WORKER__PRELOAD), so
nothing of it is in crashcheck itself.

  huge    every unit reports progress and returns stats with counts past 2^64 and 10^300
          (as WOART's bulk-loaded histories do), then runs as usual
  raise   unit 1 raises instead of running
  silent  no unit's message reaches the client, and no unit ever ends; each unit, as it falls
          silent, makes a file unit-N in $CRASHCHECK_TEST_DASK_MARKS (when set) for the test to
          wait on
"""
import os
import time

import distributed

import crashcheck.harness.run.dask_executor as dask_executor
from crashcheck.harness.run.results import Progress

FAULT = os.environ.get("CRASHCHECK_TEST_DASK_FAULT", "")
HUGE = 10 ** 300
# (Dask may import a preload twice: wrap the real one only)
_real = getattr(dask_executor, "real_fuzz_batch", dask_executor.fuzz_batch)
dask_executor.real_fuzz_batch = _real


def _faulty(unit, stop, progress=None, parent_pid=None):
    if FAULT == "huge":
        if progress is not None:
            progress(Progress(unit.structure, unit.bug, histories=1, states=HUGE, executions=2 ** 64 + 1,
                              points=2 ** 70, complete=2 ** 70, bugs=0, elapsed=1.0))
        out = _real(unit, stop, progress, parent_pid)
        out.stats.states_legal += HUGE
        out.stats.states_explored += 2 ** 64
        return out
    if FAULT == "raise" and unit.share == 1:
        raise RuntimeError("injected fault in unit 1")
    if FAULT == "silent":
        marks = os.environ.get("CRASHCHECK_TEST_DASK_MARKS")
        if marks:
            open(os.path.join(marks, f"unit-{unit.share}"), "w").close()
        time.sleep(3600)
    return _real(unit, stop, progress, parent_pid)


dask_executor.fuzz_batch = _faulty
if FAULT == "silent":
    distributed.Worker.log_event = lambda self, topic, msg: None
