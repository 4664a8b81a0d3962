"""The schema kit: small specs that check a JSON value and return it normalised.

Owns the combinators (Nat, Big, Seconds, Text, Bool, Opt, List, Tuple, Map, Obj with REQUIRED and
defaults) and SchemaError, whose message names the field (`bugs[2].crash.choice[0]`) and what it
should be. Formats are data built from them: the bug records and results files
(harness/triage/record_formats.py), the seeded-bug catalogs (harness/target/structures.py).
Knows no format and reads no file (harness/core/user_files.py reads one).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

MAX_INT = 1 << 63              # counts, offsets and indexes above this are corrupt, not big


class SchemaError(Exception):
    """A value that does not fit its spec (internal): WHERE is the field path."""

    def __init__(self, where: str, want: str, value: Any = None, missing: bool = False):
        super().__init__(f"{where} is missing" if missing else
                         f"{where or 'the top level'} must be {want}, not {value_kind(value)}")


def value_kind(value: Any) -> str:
    """VALUE in a few words, for a message that says what a field holds instead."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value}" if abs(value) < 10 ** 12 else "a number that large"
    if isinstance(value, float):
        return f"{value}"
    if isinstance(value, str):
        return f"the text {value[:40]!r}" if len(value) <= 40 else "a text"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    return "an object" if isinstance(value, dict) else type(value).__name__


# -- specs: small classes, each checks one value and returns it normalised ------------------------

class Spec:
    def check(self, value: Any, where: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class Nat(Spec):
    """A whole number from LO up to (not including) MAX_INT."""
    lo: int = 0

    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, int) or not self.lo <= value < MAX_INT:
            raise SchemaError(where, f"a whole number from {self.lo} to 2^63-1", value)
        return value


@dataclass(frozen=True)
class Big(Spec):
    """A count of any size: a whole number >= 0, or one written as a decimal string."""

    def check(self, value, where):
        if isinstance(value, str) and value.isdigit() and value.isascii():
            return value
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise SchemaError(where, "a whole number >= 0 (or its decimal text)", value)
        return value


@dataclass(frozen=True)
class Seconds(Spec):
    def check(self, value, where):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or value < 0:
            raise SchemaError(where, "a number of seconds >= 0", value)
        return value


@dataclass(frozen=True)
class Text(Spec):
    choices: tuple[str, ...] = ()

    def check(self, value, where):
        if not isinstance(value, str):
            raise SchemaError(where, "a text", value)
        if self.choices and value not in self.choices:
            raise SchemaError(where, f"one of {', '.join(self.choices)}", value)
        return value


@dataclass(frozen=True)
class Bool(Spec):
    def check(self, value, where):
        if not isinstance(value, bool):
            raise SchemaError(where, "true or false", value)
        return value


@dataclass(frozen=True)
class Opt(Spec):
    """SPEC or null."""
    spec: Spec

    def check(self, value, where):
        return None if value is None else self.spec.check(value, where)


@dataclass(frozen=True)
class List(Spec):
    item: Spec

    def check(self, value, where):
        if not isinstance(value, list):
            raise SchemaError(where, "a list", value)
        return [self.item.check(v, f"{where}[{i}]") for i, v in enumerate(value)]


@dataclass(frozen=True)
class Tuple(Spec):
    items: tuple[Spec, ...]

    def check(self, value, where):
        if not isinstance(value, list) or len(value) != len(self.items):
            raise SchemaError(where, f"a list of {len(self.items)}", value)
        return [s.check(v, f"{where}[{i}]") for i, (s, v) in enumerate(zip(self.items, value))]


@dataclass(frozen=True)
class Map(Spec):
    """An object with any keys, each value a VALUE."""
    value: Spec

    def check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(where, "an object", value)
        return {k: self.value.check(v, f"{where}[{k!r}]") for k, v in value.items()}


REQUIRED = object()


@dataclass(frozen=True, eq=False)
class Obj(Spec):
    """An object with these FIELDS: name -> (spec, default), REQUIRED as the default for a field
    that must be there. Unknown fields are kept (a newer crashcheck of the same format may add some)."""
    fields: dict

    def check(self, value, where):
        if not isinstance(value, dict):
            raise SchemaError(where, "an object", value)
        out = dict(value)
        for name, (spec, default) in self.fields.items():
            at = f"{where}.{name}" if where else name
            if name not in value:
                if default is REQUIRED:
                    raise SchemaError(at, "present", missing=True)
                out[name] = default() if callable(default) else default
            else:
                out[name] = spec.check(value[name], at)
        return out


__all__ = ["Big", "Bool", "List", "MAX_INT", "Map", "Nat", "Obj", "Opt", "REQUIRED", "SchemaError", "Seconds", "Spec",
           "Text", "Tuple", "value_kind"]
