"""crashsim: trace reading, persistency models, crash-state enumeration and the checker runner.

The pipeline, one module per step:

    trace.py         read a binary trace (docs/trace-format.md)        -> Trace, Event
    trace_writer.py  write one from Python (tests, hand-made traces)
    pmemcheck_import.py / pmemcheck_export.py   pmemcheck store logs <-> traces (docs/pmemcheck.md)
    persistency.py   persistency-model options, failure-atomic pieces   -> ModelOptions, Piece
    simulate.py      x86-ADR / eADR, one incremental pass               -> CrashPoint, Unit
    states.py        strategies (exhaustive, bounded) and state codec   -> choice vectors
    layout.py        where each PM region sits in a post-crash image    -> Layout
    image.py         guaranteed base image, fingerprints, overlays
    reference.py     brute-force enumerator the fast one is tested against
    runner_client.py client of the C checker runner (docs/runner-protocol.md)
    runner/          the C checker runner itself, a fork server the drivers' `serve` runs
                     (built by build.mk into the runtime library; runner_internal.h maps it)
    explore.py       the streaming pipeline the harness uses           -> StateOutcome

Typical use:

    from crashcheck.crashsim import Runner, explore, read_trace
    trace = read_trace("run.trace")
    with Runner(["build/trees/wort/driver-native", "serve", "--size", str(trace.pool_size)]) as r:
        for out in explore(trace, runner=r, strategy="bounded", limit=64, seed=0):
            ...   # out.point (crash point), out.kept / out.lost (pieces), out.result
"""
from .explore import Progress, StateOutcome, explore
from .persistency import ModelError, ModelOptions, Piece
from .runner_client import CheckResult, Runner, RunnerError
from .simulate import CrashPoint, Simulator, Unit
from .states import DEFAULT_LIMIT, STRATEGIES, StateCodec, explored_count, select
from .trace import Event, Site, Trace, TraceError, read_trace
from .trace_writer import TraceWriter

__all__ = [
    "CheckResult", "CrashPoint", "DEFAULT_LIMIT", "Event", "ModelError", "ModelOptions", "Piece",
    "Progress", "Runner", "RunnerError", "STRATEGIES", "Simulator", "Site", "StateCodec",
    "StateOutcome", "Trace", "TraceError", "TraceWriter", "Unit", "explore", "explored_count",
    "read_trace", "select",
]
