"""Reports: HTML pages and pictures made from results files and bug records.

Imports crashcheck.harness.triage and below. It never runs or checks anything; it reads records.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
