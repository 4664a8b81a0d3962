"""The structures crashcheck knows: built-in trees and users' own, with their drivers and catalogs.

Owns name -> driver binaries, seeded-bug catalog (bugs.json), expectation file (expect.json) and
key kind. Built-in structures are the folders trees/<name>/ with an adapter.c, built by
`make trees` into build/trees/<name>/ (driver, driver-native, driver-bug-<bug>). A user's
structure is built by `crashcheck build` into build/user/<name>/ with a meta.json beside it.
Never runs a driver except `driver info` (cached).
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from harness.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
BUILD = Path(os.environ.get("CRASHCHECK_BUILD", ROOT / "build"))
MODELS = ("adr", "eadr")


@dataclass(frozen=True)
class SeededBug:
    name: str
    define: str
    cls: str
    description: str


@dataclass
class Structure:
    name: str
    folder: Path                 # sources (trees/<name> or the user's)
    build: Path                  # where its drivers are
    builtin: bool
    bugs: list[SeededBug] = field(default_factory=list)
    known: list[dict] = field(default_factory=list)   # expect.json "known" entries
    models: tuple[str, ...] = MODELS

    def driver(self, bug: str | None = None) -> Path:
        """The traced driver, or a seeded-bug variant's."""
        if bug is None:
            path = self.build / "driver"
        else:
            if bug not in {b.name for b in self.bugs}:
                raise UsageError(f"{self.name} has no seeded bug {bug!r}; known: "
                                 f"{', '.join(b.name for b in self.bugs) or 'none'}")
            path = self.build / f"driver-bug-{bug}"
        if not path.exists():
            hint = "run `make trees` (or scripts/setup)" if self.builtin else f"run `crashcheck build {self.name} ...` again"
            raise UsageError(f"driver for {self.name}{' bug ' + bug if bug else ''} not built ({path}); {hint}")
        return path

    def native_driver(self) -> Path:
        return self.build / "driver-native"

    def bug(self, name: str) -> SeededBug:
        for b in self.bugs:
            if b.name == name:
                return b
        raise UsageError(f"{self.name} has no seeded bug {name!r}")

    @property
    def info(self) -> dict:
        return _driver_info(str(self.driver()))

    @property
    def key_kind(self) -> str:
        return self.info.get("key_kind", "u64")

    @property
    def value_size(self) -> int:
        return int(self.info.get("value_size", 8))

    @property
    def value_min(self) -> int:
        """The shortest value the structure takes (drivers before value_min: value_size)."""
        return int(self.info.get("value_min", self.value_size))


@lru_cache(maxsize=None)
def _driver_info(driver: str) -> dict:
    try:
        out = subprocess.run([driver, "info"], capture_output=True, text=True, timeout=30, check=True).stdout
        return json.loads(out)
    except (subprocess.SubprocessError, OSError, json.JSONDecodeError) as exc:
        raise UsageError(f"{driver} info failed: {exc}") from None


def _load_json(path: Path, default):
    if not path.exists():
        return default
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise UsageError(f"{path}: not valid JSON ({exc})") from None


def _catalog(folder: Path, bugs_file: Path | None = None) -> tuple[list[SeededBug], list[dict]]:
    bugs = [SeededBug(b["name"], b["define"], b["class"], b.get("description", ""))
            for b in _load_json(bugs_file or folder / "bugs.json", [])]
    known = _load_json(folder / "expect.json", {}).get("known", [])
    return bugs, known


def builtin_names() -> list[str]:
    trees = ROOT / "trees"
    return sorted(p.name for p in trees.iterdir()
                  if p.is_dir() and p.name != "common" and (p / "adapter.c").exists())


def user_names() -> list[str]:
    users = BUILD / "user"
    if not users.is_dir():
        return []
    return sorted(p.name for p in users.iterdir() if (p / "meta.json").exists())


def all_names() -> list[str]:
    return builtin_names() + [n for n in user_names() if n not in builtin_names()]


def get(name: str) -> Structure:
    if name in builtin_names():
        folder = ROOT / "trees" / name
        bugs, known = _catalog(folder)
        return Structure(name, folder, BUILD / "trees" / name, True, bugs, known)
    if name in user_names():
        build = BUILD / "user" / name
        meta = _load_json(build / "meta.json", {})
        folder = Path(meta.get("folder", build))
        bugs, known = _catalog(folder, Path(meta["bugs"]) if meta.get("bugs") else None)
        return Structure(name, folder, build, False, bugs, known)
    raise UsageError(f"unknown structure {name!r}; known: {', '.join(all_names()) or 'none (run make)'}")
