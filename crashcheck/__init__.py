"""crashcheck: crash-consistency testing for persistent-memory data structures.

The one Python namespace of the project (docs/architecture.md "One namespace"):

    crashcheck.harness    the command line, runs, checks, triage and reports
    crashcheck.crashsim   traces, persistency models, crash states, the checker runner's client
    crashcheck.specs      the reference models and the oracle

In the repository they stay the top-level folders harness/, crashsim/ and specs/; this folder
reaches them through the links harness -> ../harness, crashsim -> ../crashsim, specs -> ../specs,
so every tool (Python's import system, import-linter, pytest) sees one ordinary package. A wheel
holds them as real folders under crashcheck/ (pyproject.toml [tool.scikit-build]), beside the
native parts it builds (crashcheck/build/). Nothing installs the names harness, crashsim or specs
at the top level.
"""
