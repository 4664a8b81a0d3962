"""Every test file has a name of its own across tests/: pytest imports them by base name
(rootdir-relative, no packages), so a second test_x.py in another folder is an "import file
mismatch" error for one of them, seen only when both run in one session (CI), never when each is
run alone."""
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_files_share_a_name():
    names = Counter(p.name for p in TESTS.rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []
