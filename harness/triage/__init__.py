"""Bugs and records: which findings of many histories are one bug, and the bug record that carries it.

Imports crashcheck.harness.check and below. It never runs a structure; it reads findings and traces.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
