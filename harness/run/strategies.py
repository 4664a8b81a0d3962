"""The histories a fuzz run draws: the structure's model's Hypothesis strategy, made repeatable.

Owns the step from a model to a strategy (`histories(model, **opts)` calls the model's own
`histories`, e.g. specs/map_histories.py for the ordered map, specs/range_lock.py for the range
lock), the strategy of one fuzz target (`for_target(structure, config)`: the run's options and
the structure's own, threaded when asked) and what makes a seed's draws the same on every run.
What a history of a model looks like belongs to the model, never to this file.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from crashcheck.harness.check.threads import threaded_histories
from crashcheck.harness.run.config import Config
from crashcheck.harness.target.structures import Structure
from crashcheck.specs import registry
# The ordered map's option choices, which the CLI and the pytest gate validate their options by.
from crashcheck.specs.map_histories import KEY_DISTRIBUTIONS, MIXES, respect
from crashcheck.specs.model import Model, Workload, with_load


def _without_source_constants() -> None:
    """Hypothesis (6.13x and later) mixes into its draws constants it finds in the source of
    every "local" module loaded (ours included), so the histories of a seed would change with
    every edit of crashcheck's own code and with which modules happen to be imported (the CLI,
    the pytest plugin and a worker process import different sets). A run must be repeatable
    from its seed alone: give Hypothesis an empty set of local constants. Its built-in constants
    (0, -1, 2^63, ...) stay. Guarded, since this is an internal of Hypothesis's."""
    try:
        from hypothesis.internal.conjecture import providers
    except ImportError:      # pragma: no cover - older Hypothesis: nothing to switch off
        return
    if hasattr(providers, "_get_local_constants") and hasattr(providers, "Constants"):
        empty = providers.Constants()
        providers._get_local_constants = lambda: empty


_without_source_constants()


class _StillClock:
    """The `time` module as Hypothesis's engine sees it inside held_engine_clock: its two clocks
    read the moment the hold began; everything else is the real module's."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self._monotonic = real.monotonic()
        self._perf_counter = real.perf_counter()

    def monotonic(self) -> float:
        return self._monotonic

    def perf_counter(self) -> float:
        return self._perf_counter

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


@contextmanager
def held_engine_clock() -> Iterator[None]:
    """Run Hypothesis with its engine's clock standing still, so which histories a seed's batch
    checks depends on the seed and the property's answers only, never on how fast they came.

    Hypothesis's engine (ConjectureRunner) reads the wall clock for two decisions: after a batch's
    first failure it generates further examples only while less than 10 s have passed
    (should_generate_more, HypothesisWorks/hypothesis#1781), and it gives up shrinking after 5
    minutes (MAX_SHRINKING_SECONDS). Histories that take a second or two to check (lazy
    exploration does) cross the 10 s mark or not depending on the machine's load: two identical
    runs with --examples checked 42 and 43 histories. No setting turns it off
    (report_multiple_bugs=False stops generating at the first failure instead). Held still,
    generation ends by max_examples and Hypothesis's call-count rules, shrinking by its own
    limits and Config.shrink_calls; the time a run may take is harness/core/budget.py's business.
    Guarded like _without_source_constants: an engine without a module-level `time` is left as
    it is (tests/e2e/test_repeatable.py notices)."""
    try:
        from hypothesis.internal.conjecture import engine
    except ImportError:      # pragma: no cover - another Hypothesis layout: nothing to hold
        yield
        return
    real = getattr(engine, "time", None)
    if real is None or not hasattr(real, "monotonic") or not hasattr(real, "perf_counter"):
        yield                # pragma: no cover
        return
    engine.time = _StillClock(real)
    try:
        yield
    finally:
        engine.time = real


def model_of(model: Model | str) -> Model:
    return registry.get(model) if isinstance(model, str) else model


def histories(model: Model | str = "ordered_map", **opts: Any):
    """MODEL's strategy of operation lists (Workloads), given the options it takes (the map's:
    keys, mix, min_ops, max_ops, key_kind, value_size, value_min, max_keys). A model without
    histories cannot be fuzzed: ValueError."""
    m = model_of(model)
    if m.histories is None:
        raise ValueError(f"the {m.name} model has no history strategy, so it cannot be fuzzed")
    return m.histories(**opts)


def for_target(structure: Structure, config: Config, model: Model | None = None, capacity: tuple = (),
               cross: tuple | None = None):
    """The histories a fuzz run of STRUCTURE draws under CONFIG: its model's strategy with the run's
    options (keys, mix, max_ops) and the structure's own (key kind, value sizes, the map operations
    its adapter has, the capacities histories must cross); with config.threads > 1, threaded
    histories. MODEL: the structure's model, when the caller has it loaded already. CAPACITY: the
    capacity points a probe run observed ((on, keys, index), harness/check/capacity.py), for a
    structure that declares no thresholds. CROSS: one such point (declared or observed) that every
    history crosses the way the probe's history did, instead."""
    model = model or structure.model()
    thresholds = structure.thresholds
    if cross is not None:
        thresholds, capacity = (), (cross,)
    # keys it cannot store and whether values must differ (expect.json): only when declared, so
    # a model that takes neither option is never given them
    declared = {k: v for k, v in (("reserved_keys", structure.reserved_keys),
                                  ("distinct_values", structure.distinct_values),
                                  ("capacity", capacity), ("cross_only", cross is not None)) if v}
    strategy = histories(model, keys=config.keys, mix=config.mix, max_ops=config.max_ops,
                         key_kind=structure.key_kind, value_size=structure.value_size,
                         value_min=structure.value_min, map_ops=structure.map_ops,
                         thresholds=thresholds, **declared)
    if config.threads > 1:
        # a model whose threads follow a protocol (the range lock) draws its own sections
        own = model.thread_histories
        sections = own(config.threads, max_ops=config.max_ops) if own else None
        contend = None
        if model.contend is not None:
            # contention re-aims operations (meetings may use any kind the adapter has) after the
            # history respected the declaration: respected again
            reserved, distinct = frozenset(structure.reserved_keys), structure.distinct_values
            kinds = tuple(structure.map_ops)

            def contend(draw, ops, start, aim=model.contend):
                out = aim(draw, ops, start, kinds)
                return respect(out, reserved, distinct) if reserved or distinct else out
        strategy = threaded_histories(strategy, config.threads, config.sched, sections, contend)
    return strategy



def given_history(ops):
    """The strategy of one history, OPS, as the user wrote it (`crashcheck check --history`):
    every draw is OPS, so Hypothesis has nothing to shrink and checks exactly it."""
    from hypothesis import strategies as st
    return st.just(ops)


__all__ = ["KEY_DISTRIBUTIONS", "MIXES", "Workload", "for_target", "given_history", "held_engine_clock",
           "histories", "model_of",
           "with_load"]
