"""Checking one history: the traced run, its crash states, recovery, the oracle's judgement, findings, shrinking.

Imports crashcheck.harness.target and crashcheck.harness.core. It knows nothing of campaigns, bug records or reports: it returns findings.
(The layers are checked by the import contract in pyproject.toml, docs/architecture.md.)
"""
