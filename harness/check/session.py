"""One checker session: a structure's driver, its model, its work folder and its runner process.

Owns what every part of checking a history shares: the driver binary (and the refusal to go on
once it is rebuilt under a running check), the structure's reference model (crashcheck.specs.registry, by the
name `driver info` reports), the scratch folder of pools, traces and histories, the budget, and
the long-lived checker runner (crashsim/runner_client.py) with its increasing state ids. Checking itself
lives in harness/check/traced_run.py, crash_free.py, judging.py, recovery_crashes.py and state_shrink.py;
harness/check/pipeline.py ties them together.
"""
from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Iterable

from crashcheck.crashsim.layout import trace_layout
from crashcheck.crashsim.runner_client import Runner, RunnerError
from crashcheck.crashsim.trace import Trace
from crashcheck.harness.check import threads
from crashcheck.harness.target import own_fault
from crashcheck.harness.core import workdir as workdirs
from crashcheck.harness.core.budget import Budget
from crashcheck.harness.core.errors import SetupError
from crashcheck.harness.core.settings import Settings
from crashcheck.harness.target.structures import Structure
from crashcheck.specs.model import Model


class Session:
    """The shared state of checking histories of one structure (or seeded-bug variant)."""

    def __init__(self, structure: Structure, bug: str | None, settings: Settings,
                 workdir: str | os.PathLike | None = None, budget: Budget | None = None) -> None:
        self.structure = structure
        self.bug = bug
        self.settings = settings
        self.budget = budget or Budget()
        self.model: Model = structure.model()
        self.driver = structure.driver(bug)
        self._driver_id = file_id(self.driver)
        self._tmp = workdirs.make_workdir(settings.pool_size) if workdir is None else None
        self.workdir = Path(workdir or self._tmp.name)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._runner: Runner | None = None
        self._runner_regions: list[str] = []       # its `serve --region` options
        self.next_state = 0

    # -- the model's notation ----------------------------------------------------------------

    def history_text(self, ops: Iterable[Any]) -> str:
        """OPS as the history file the driver reads (one operation per line)."""
        return history_text(self.model, ops)

    def followup(self, ops: list) -> list:
        """The model's follow-up workload for OPS (empty when follow-ups are off)."""
        if not self.settings.followup:
            return []
        s = self.structure
        return allowed_ops(s, self.model.followup(ops, key_kind=s.key_kind, value_size=s.value_size,
                                                  map_ops=s.map_ops))

    def continuation(self, ops: list, done: int, inflight: int | None) -> list:
        """What runs after recovering a crash of OPS with DONE operations completed and INFLIGHT
        in flight: the model's continuation aimed at that crash (Settings.continuation keys next
        to its key), or its follow-up if it has none; empty when follow-ups are off."""
        if not self.settings.followup:
            return []
        if self.model.continuation is None:
            return self.followup(ops)
        s = self.structure
        return allowed_ops(s, self.model.continuation(ops, done, inflight, key_kind=s.key_kind,
                                                      value_size=s.value_size, map_ops=s.map_ops,
                                                      neighbours=self.settings.continuation))

    # -- the runner ------------------------------------------------------------------------

    def runner(self, trace: Trace | None = None) -> Runner:
        """The checker runner, started (again) when there is none, or when TRACE's regions past
        the pool (crashcheck.crashsim.layout) are not the ones it maps."""
        regions = trace_layout(trace).serve_args() if trace is not None and trace.regions else []
        if self._runner is not None and not self._runner.closed and regions != self._runner_regions:
            self._runner.close()
        if self._runner is None or self._runner.closed:
            s = self.settings
            self.check_driver()
            try:
                self._runner = Runner([str(self.driver), "serve", "--size", str(s.pool_size), *regions,
                                       "--timeout-ms", str(s.timeout_ms), "--mem-mb", str(s.mem_mb)],
                                      env=clean_env(), restart=True, vet=self._vet_answer)
                self._runner_regions = regions
            except RunnerError as exc:
                raise SetupError(f"{self.structure.name}: cannot start the checker runner: {exc}") from None
            self.next_state = 0
        return self._runner

    def _vet_answer(self, res) -> None:
        """A check that died in crashcheck's own code ends the run as a set-up error (own_fault)."""
        if res.status in ("signal", "oom"):
            own_fault.check(res.stderr, f"a crash-state check of {self.structure.name}")

    def free_state_id(self) -> int:
        """The first state id a new exploration may use with the runner: past every id handed out,
        including the ids of states an exploration queued (a batch at a time) but never yielded
        because an exception left its loop (the runner refuses an id it has seen)."""
        runner = self._runner
        return max(self.next_state, runner.next_state if runner is not None and not runner.closed else 0)

    def check_driver(self) -> None:
        """Refuse to go on with a driver that was rebuilt (or removed) since the run started:
        its traces would not match the ones already judged."""
        if file_id(self.driver) != self._driver_id:
            raise SetupError(f"the driver {self.driver} changed during the run (rebuilt?); "
                             "run crashcheck again once the build is finished")

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self._tmp is not None:
            remove_workdir(self._tmp)
            self._tmp = None


def remove_workdir(tmp, tries: int = 20) -> None:
    """Remove a checker's work folder. A stop (SIGTERM, the budget) may land while a killed
    driver's process group is still going away and writing its last bytes there, so the folder is
    not empty for a moment: try again for up to two seconds, then remove what can be removed (the
    next run cleans up a folder left behind)."""
    for _ in range(tries):
        try:
            tmp.cleanup()
            return
        except OSError:
            time.sleep(0.1)
    shutil.rmtree(tmp.name, ignore_errors=True)


def allowed_ops(structure, ops: Iterable[Any]) -> list:
    """OPS without the operations on a key STRUCTURE cannot store (expect.json "reserved_keys"; a
    scan may start anywhere): what runs after recovery respects them as histories do."""
    reserved = set(getattr(structure, "reserved_keys", ()))
    if not reserved:
        return list(ops)
    return [op for op in ops if getattr(op, "kind", "") == "scan" or getattr(op, "key", None) not in reserved]


def history_text(model: Model, ops: Iterable[Any]) -> str:
    """OPS as the driver's history text; a threaded history (harness/check/threads.py) with its
    `thread N` sections."""
    if threads.is_threaded(ops):
        return threads.history_text(model, ops)
    return "".join(model.op_text(op) + "\n" for op in ops)


def file_id(path: Path) -> tuple[int, int, int, int] | None:
    """What changes when a file is rebuilt: inode, size, modification time (ns), device."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_dev)


def clean_env() -> dict[str, str]:
    """The environment of the driver's runs, without a trace file inherited from ours. The pool
    stands for PM, so libpmem is told to treat it as PM (unless the user said otherwise): PMDK's
    libraries then flush with cache-line flushes and fences, as on PM, not with msync."""
    env = dict(os.environ)
    env.pop("CRASHCHECK_TRACE", None)
    env.setdefault("PMEM_IS_PMEM_FORCE", "1")
    return env


__all__ = ["Session", "clean_env", "file_id", "history_text"]
