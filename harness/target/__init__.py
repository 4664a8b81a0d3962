"""The structure under test: the catalog of built-in and users' structures, building users' code, tracers, crashes in our own code.

Imports only crashcheck.harness.core. It never checks a history and never judges an outcome.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
