"""The histories a fuzz run draws: the structure's model's Hypothesis strategy, made repeatable.

Owns the step from a model to a strategy (`histories(model, **opts)` calls the model's own
`histories`, e.g. specs/map_histories.py for the ordered map, specs/range_lock.py for the range
lock) and what makes a seed's draws the same on every run. What a history of a model looks like
belongs to the model, never to this file.
"""
from __future__ import annotations

from typing import Any

from specs import models
from specs.model import Model, Workload, with_load


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


def model_of(model: Model | str) -> Model:
    return models.get(model) if isinstance(model, str) else model


def histories(model: Model | str = "ordered_map", **opts: Any):
    """MODEL's strategy of operation lists (Workloads), given the options it takes (the map's:
    keys, mix, min_ops, max_ops, key_kind, value_size, value_min, max_keys). A model without
    histories cannot be fuzzed: ValueError."""
    m = model_of(model)
    if m.histories is None:
        raise ValueError(f"the {m.name} model has no history strategy, so it cannot be fuzzed")
    return m.histories(**opts)


def _map_choices() -> tuple[tuple[str, ...], tuple[str, ...]]:
    from specs.map_histories import KEY_DISTRIBUTIONS as keys, MIXES as mixes
    return keys, mixes


# The ordered map's option choices, which the CLI and the pytest gate validate their options by.
KEY_DISTRIBUTIONS, MIXES = _map_choices()

__all__ = ["KEY_DISTRIBUTIONS", "MIXES", "Workload", "histories", "model_of", "with_load"]
