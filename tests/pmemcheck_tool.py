"""Where the tests find pmemcheck: as crashcheck would ($CRASHCHECK_PMEMCHECK, then `pmemcheck` on
PATH) and, for the tests only, in ../shared/tools/pmemcheck next to the repository (pmemcheck is
not packaged by Debian; tests that need it skip, saying why, when it is nowhere)."""
from __future__ import annotations

import os
import shutil

from cli_run import ROOT

TEST_FALLBACK = ROOT.parent / "shared" / "tools" / "pmemcheck"


def find_pmemcheck() -> str | None:
    env = os.environ.get("CRASHCHECK_PMEMCHECK")
    if env:
        return env
    found = shutil.which("pmemcheck")
    if found:
        return found
    fallback = TEST_FALLBACK / "pmemcheck"
    return str(fallback) if os.access(fallback, os.X_OK) else None
