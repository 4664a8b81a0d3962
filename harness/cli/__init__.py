"""The front ends: the `crashcheck` command (one module per subcommand) and the pytest plugin.

The top layer: it may import every room, and no room imports it.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
