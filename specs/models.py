"""The model registry: a model's name (as structures and CLIs name it) -> its specs.model.Model.

Owns only the names. Each model lives in its own module and is imported on first use.
"""
from __future__ import annotations

import importlib

from specs.model import Model

# name -> (module, attribute)
_REGISTRY: dict[str, tuple[str, str]] = {
    "ordered_map": ("specs.ordered_map", "MODEL"),
    "range_lock": ("specs.range_lock", "MODEL"),
    "range_lock_spurious": ("specs.range_lock", "SPURIOUS"),
}


def names() -> list[str]:
    """Every registered model name."""
    return sorted(_REGISTRY)


def get(name: str) -> Model:
    """The model registered as NAME; ValueError naming the known ones otherwise."""
    try:
        module, attr = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (one of {', '.join(names())})") from None
    return getattr(importlib.import_module(module), attr)


def register(name: str, module: str, attr: str = "MODEL") -> None:
    """Add a model defined outside specs/ (a user's own structure): MODULE.ATTR is its Model."""
    _REGISTRY[name] = (module, attr)


__all__ = ["get", "names", "register"]
