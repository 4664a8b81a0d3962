"""Debian's Chromium for the report tests that look at a page (tests/e2e/test_report_browser.py,
test_fix_search.py): where it is, the one line a test fails with when it is missing, and how it is
launched (headless, no network, no sandbox: CI runs as root)."""
from __future__ import annotations

from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"


def require_chromium() -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian chromium is missing: run scripts/setup (it installs it)")


def launch(p):
    """A Chromium browser of playwright P (sync_playwright())."""
    return p.chromium.launch(executable_path=CHROMIUM, args=[
        "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
        "--disable-background-networking", "--disable-component-update"])
