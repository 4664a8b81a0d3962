"""Every default of a fuzz run, in one place: the CLI, the pytest gate, Settings, record reading
and the docs take their defaults from here, so they cannot drift apart.

Owns only numbers and names. The C side repeats one of them, the limits of a check when
`driver serve` is run by hand (CC_RUNNER_DEFAULT_LIMITS in crashsim/runner/runner.h); harness
always passes its own, and tests/unit/test_defaults.py holds the header to these values.
"""
from __future__ import annotations

import os

from crashcheck.crashsim.states import DEFAULT_LIMIT

PERSISTENCY_MODEL = "adr"       # unless the structure declares another (expect.json "model")
STRATEGY = "lazy"               # crash states per crash point: lazy (every state, by what recovery
                                # reads; crashsim/lazy.py), bounded sample, or exhaustive
LIMIT = DEFAULT_LIMIT           # per crash point: bounded's states, lazy's executions (a lazy point
                                # that needs more is partial and also gets bounded's sample)
# Legal states at one crash point that `--strategy exhaustive` takes on (a minute or so of checks
# at 20,000 states/s); a trace with a point past it is refused before any state is checked
# (harness/check/exhaustive.py): one 328-byte memset leaves 2^41.
EXHAUSTIVE_MAX = 10 ** 6
SEED = 1                        # a run's seed (Settings() alone: 0, the seed of library calls)
MAX_OPS = 10                    # longest checked part of a history
SHRINK = 40                     # histories Hypothesis may try while shrinking one batch's failures
KEYS = "mixed"                  # key distribution of map histories
MIX = "mixed"                   # operation mix of map histories
JOBS = 1                        # worker processes
BUDGET_S = 20.0                 # seconds per structure when neither --examples nor --budget is given
TRACERS = ("pass", "pmemcheck")  # who traces a history's run: the pass, or pmemcheck (harness/target/tracers.py)
TRACER = "pass"
ATOMIC_UNIT = 8                 # bytes: the failure-atomic unit stores are split into (crashsim owns the rule)
# The continuation aimed at the crash after recovery (crashcheck.specs.ordered_map.continuation), with
# N keys inserted next to the crashed operation's key; `--continuation off` runs the short fixed
# follow-up of before instead. 6 passes a 4-slot node and an ART N4 whichever side the key lies on,
# and keeps a checked state's cost within 2x of the follow-up's (1.2-1.75x, bench/README.md
# "Continuation on by default"); with it, the whole gate passes (tests/quality/test_gate.py).
CONTINUATION: int | None = 6
SUGGESTED_CONTINUATION = 6
MAX_CONTINUATION = 64           # more would make each check's workload longer than its recovery's
RECOVERY_CRASHES = 4            # post-crash images per history whose recovery is crashed again
POOL_SIZE = 8 << 20             # bytes; small pools keep base-image loads cheap
TIMEOUT_MS = 2000               # one crash state's check (recovery + follow-up), wall clock
MEM_MB = 512                    # one crash state's check, address space it may add
CPU_S = 10                      # one crash state's check, CPU seconds (the runner's own limit)
RUN_TIMEOUT_MS = 10_000         # a traced crash-free run, before per-operation time
OP_TIMEOUT_MS = 100             # a traced crash-free run, per operation
RUN_TIMEOUT_CAP_MS = 120_000    # a traced crash-free run at most
READS_CACHE_MB = 256            # program mode, lazy: the judged images' read logs kept for the search
                                # (harness/check/reads_cache.py; past it the oldest are judged again)
HANG_AFTER = 2                  # checks of one history that may run out of TIMEOUT_MS before the
                                # history's other states get hang_short_ms (0: every state gets it
                                # all; harness/check/hangs.py)

# The environment may change the limits of checks and runs (tests make them small):
ENVIRONMENT = {
    "timeout_ms": ("CRASHCHECK_TIMEOUT_MS", TIMEOUT_MS),
    "mem_mb": ("CRASHCHECK_MEM_MB", MEM_MB),
    "run_timeout_ms": ("CRASHCHECK_RUN_TIMEOUT_MS", RUN_TIMEOUT_MS),
    "op_timeout_ms": ("CRASHCHECK_OP_TIMEOUT_MS", OP_TIMEOUT_MS),
    "hang_after": ("CRASHCHECK_HANG_AFTER", HANG_AFTER),
    "reads_cache_mb": ("CRASHCHECK_READS_CACHE_MB", READS_CACHE_MB),
}


def hang_short_ms(timeout_ms: int) -> int:
    """The shorter limit of a history's checks once HANG_AFTER of them ran out of TIMEOUT_MS:
    an eighth of it (250 ms of the default 2 s, hundreds of times a normal check's time), at least
    50 ms (a loaded machine's scheduling delays). Only a check that then hangs the way a check of
    the same history hung with the full limit is called hung (harness/check/hangs.py)."""
    return min(timeout_ms, max(50, timeout_ms // 8))


def from_env(name: str) -> int:
    """The limit NAME (a key of ENVIRONMENT): its environment variable if it holds an integer,
    else the default."""
    var, default = ENVIRONMENT[name]
    try:
        return int(os.environ.get(var, ""))
    except ValueError:
        return default
