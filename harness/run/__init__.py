"""A fuzz run: the search over histories, the plan of targets, executors (local processes, Dask) and the journal.

Imports harness.triage and below. It never renders a report and never parses a command line.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
