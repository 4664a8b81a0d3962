"""The lazy search's reads cache (harness/check/reads_cache.py): equal logs are held once, the
whole stays within its byte budget by dropping the least recently used image's reads (its
verdict kept, marked DROPPED), and reads kept are returned as they were given."""
from __future__ import annotations

from crashcheck.harness.check.program_reads import Access, Reads
from crashcheck.harness.check.reads_cache import DROPPED, ReadsCache


def _reads(n: int, start: int = 0) -> list[Reads]:
    return [Reads([Access(0, start + 8 * i, 8, False) for i in range(n)])]


def test_equal_logs_are_held_once():
    cache, verdicts = ReadsCache(1 << 20), {}
    for key in range(10):
        verdicts[key] = ("ok", cache.keep(key, _reads(100), verdicts))
    assert cache.size == 100 * 16                     # one 100-access log, not ten
    assert all(v[1] == _reads(100) for v in verdicts.values())
    assert verdicts[0][1][0].packed is verdicts[9][1][0].packed


def test_the_budget_drops_the_least_recently_used():
    cache, verdicts = ReadsCache(3 * 100 * 16), {}
    for key in range(3):
        verdicts[key] = ("ok", cache.keep(key, _reads(100, 1000 * key), verdicts))
    cache.touch(0)                                    # used again: 1 is now the oldest
    verdicts[3] = ("ok", cache.keep(3, _reads(100, 3000), verdicts))
    assert cache.size <= cache.budget and cache.dropped == 1
    assert verdicts[1] == ("ok", DROPPED)
    assert [verdicts[k][1] for k in (0, 2, 3)] == [_reads(100, 0), _reads(100, 2000), _reads(100, 3000)]
    # the same image judged again takes its place back; untrusted reads are not kept
    verdicts[1] = ("ok", cache.keep(1, _reads(100, 1000), verdicts))
    assert verdicts[1][1] == _reads(100, 1000) and cache.size <= cache.budget
    assert cache.keep(4, None, verdicts) is None


def test_one_image_past_the_budget_is_still_kept():
    cache, verdicts = ReadsCache(16), {}
    verdicts[0] = ("ok", cache.keep(0, _reads(50), verdicts))
    assert verdicts[0][1] == _reads(50)
