"""How one fuzz run checks its histories: the Settings record (defaults in harness/defaults.py).

Owns only the knobs and their meaning; the modules that check a history read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from crashsim.model import ModelOptions
from harness import defaults


@dataclass
class Settings:
    """How a history is checked (one fuzz run uses one Settings)."""
    model: str = defaults.PERSISTENCY_MODEL      # the persistency model (adr, eadr), not the spec model
    strategy: str = defaults.STRATEGY
    limit: int = defaults.LIMIT
    seed: int = 0
    pool_size: int = defaults.POOL_SIZE
    # Limits of one crash state's check (the runner's) and of the traced runs, which may take
    # run_timeout_ms plus op_timeout_ms per operation (at most defaults.RUN_TIMEOUT_CAP_MS).
    # The environment may change them (harness/defaults.py ENVIRONMENT).
    timeout_ms: int = field(default_factory=lambda: defaults.from_env("timeout_ms"))
    mem_mb: int = field(default_factory=lambda: defaults.from_env("mem_mb"))
    run_timeout_ms: int = field(default_factory=lambda: defaults.from_env("run_timeout_ms"))
    op_timeout_ms: int = field(default_factory=lambda: defaults.from_env("op_timeout_ms"))
    followup: bool = True
    clflush_guarantees: bool = False
    # Post-crash images per history whose own recovery is traced and crashed (0: off). Recovery
    # must be idempotent: a crash while it repairs or replays a log, then recovery again, must
    # still end in a state acceptable for the original crash.
    recovery_crashes: int = defaults.RECOVERY_CRASHES

    def options(self) -> ModelOptions:
        return ModelOptions(model=self.model, clflush_guarantees=self.clflush_guarantees)


__all__ = ["Settings"]
