"""The core: defaults, settings, errors, budgets, the schema kit, counts, paths, work folders, supervised children and the collector's settings.

Everything above may import it; it imports nothing of harness outside itself. It never runs a structure's code and knows no structure.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
