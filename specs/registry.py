"""The reference-model registry: a model's name (as structures and CLIs name it) -> its crashcheck.specs.model.Model.

Owns only the names. Each model lives in its own module and is imported on first use.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
from pathlib import Path

from crashcheck.specs.model import Model

# name -> (module, attribute)
_REGISTRY: dict[str, tuple[str, str]] = {
    "ordered_map": ("crashcheck.specs.ordered_map", "MODEL"),
    "range_lock": ("crashcheck.specs.range_lock", "MODEL"),
    "range_lock_spurious": ("crashcheck.specs.range_lock", "SPURIOUS"),
}


# name -> Model loaded from a file of the user's (load_file)
_LOADED: dict[str, Model] = {}


def names() -> list[str]:
    """Every registered model name."""
    return sorted(set(_REGISTRY) | set(_LOADED))


def get(name: str) -> Model:
    """The model registered as NAME; ValueError naming the known ones otherwise."""
    if name in _LOADED:
        return _LOADED[name]
    try:
        module, attr = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r} (one of {', '.join(names())})") from None
    return getattr(importlib.import_module(module), attr)


def register(name: str, module: str, attr: str = "MODEL") -> None:
    """Add a model defined outside specs/ (a user's own structure): MODULE.ATTR is its Model."""
    _REGISTRY[name] = (module, attr)


def load_file(name: str, path: str | os.PathLike) -> Model:
    """Load the model NAME from a Python file of the user's (its `MODEL`, a crashcheck.specs.model.Model
    named NAME) and register it. ValueError says what is wrong with the file."""
    if name in _LOADED:
        return _LOADED[name]
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"model file {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"crashcheck_user_model_{name}", path)
    if spec is None or spec.loader is None:
        raise ValueError(f"model file {path} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:      # noqa: BLE001 - the user's code: any error is theirs, in one line
        raise ValueError(f"model file {path} failed to load: {type(exc).__name__}: {exc}") from None
    model = getattr(module, "MODEL", None)
    if not isinstance(model, Model):
        raise ValueError(f"model file {path} defines no MODEL = crashcheck.specs.model.Model(...)")
    if model.name != name:
        raise ValueError(f"model file {path} defines the model {model.name!r}, but the structure names {name!r}")
    _LOADED[name] = model
    return model


__all__ = ["get", "load_file", "names", "register"]
