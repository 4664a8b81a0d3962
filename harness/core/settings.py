"""How one fuzz run checks its histories: the Settings record (defaults in harness/core/defaults.py).

Owns only the knobs and their meaning; the modules that check a history read them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.harness.core import defaults


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
    # The environment may change them (harness/core/defaults.py ENVIRONMENT).
    timeout_ms: int = field(default_factory=lambda: defaults.from_env("timeout_ms"))
    mem_mb: int = field(default_factory=lambda: defaults.from_env("mem_mb"))
    run_timeout_ms: int = field(default_factory=lambda: defaults.from_env("run_timeout_ms"))
    op_timeout_ms: int = field(default_factory=lambda: defaults.from_env("op_timeout_ms"))
    # Checks of one history that may run out of timeout_ms before the history's other states get
    # a shorter limit (harness/check/hangs.py; 0: every state gets the whole timeout)
    hang_after: int = field(default_factory=lambda: defaults.from_env("hang_after"))
    followup: bool = True
    # Keys inserted next to the crashed operation's key in the continuation after recovery
    # (specs/ordered_map.py continuation; `fuzz --continuation N`)
    continuation: int | None = defaults.CONTINUATION   # None: the fixed follow-up
    clflush_guarantees: bool = False
    # Post-crash images per history whose own recovery is traced and crashed (0: off). Recovery
    # must be idempotent: a crash while it repairs or replays a log, then recovery again, must
    # still end in a state acceptable for the original crash.
    recovery_crashes: int = defaults.RECOVERY_CRASHES
    # Bytes that persist all or nothing: a wider store (a 16-byte store inside one line too) is
    # split into pieces of this size that persist in order and may be cut between them.
    atomic_unit: int = defaults.ATOMIC_UNIT
    # Who traces the driver's runs: the pass's own runtime, or Valgrind's pmemcheck (harness/target/tracers.py)
    tracer: str = defaults.TRACER
    # Search a fix of every ordering finding on its trace and prove it (harness/check/fix_search.py)
    fixes: bool = True
    # Tally flushes and fences that did nothing over the run's histories (`fuzz --perf`)
    perf: bool = False

    def options(self) -> ModelOptions:
        return ModelOptions(model=self.model, clflush_guarantees=self.clflush_guarantees,
                            atomic_unit=self.atomic_unit)

    def assumptions(self) -> dict:
        """What every verdict of the run assumed about the hardware, for records and reports
        (docs/bug-record.md "Assumptions")."""
        return {"model": self.model, "atomic_unit": self.atomic_unit,
                "clflush_guarantees": self.clflush_guarantees,
                "text": assumptions_text(self.model, self.atomic_unit, self.clflush_guarantees)}


MODEL_WORDS = {
    "adr": "x86-ADR (caches are volatile: a store is durable once its line is flushed and the "
           "flushing thread fences; stores to one line persist in order)",
    "eadr": "eADR (caches are persistent: a store is durable once it leaves the store buffer; "
            "each thread's stores since its last fence persist as a prefix)",
}


def assumptions_text(model: str, atomic_unit: int, clflush_guarantees: bool = False) -> str:
    """One sentence a person reads before trusting a verdict."""
    text = (f"Persistency model {MODEL_WORDS.get(model, model)}; failure-atomic unit "
            f"{atomic_unit} bytes: a wider store (even a 16-byte one inside one cache line) is split "
            f"into {atomic_unit}-byte pieces that persist in order, so a crash may keep some of them "
            f"(change it with --atomic-unit); the pieces of one memset, memcpy or memmove inside one "
            f"cache line persist in any order.")
    if clflush_guarantees:
        text += " A clflush guarantees its line without a fence."
    return text


__all__ = ["MODEL_WORDS", "Settings", "assumptions_text"]
