"""Program mode's read logs (harness/check/program_reads.py): a log the runtime wrote
(instrument/runtime/rt_readlog.c's layout) is read back in order, and every reason a command's
reads cannot be followed is one line naming it."""
from __future__ import annotations

from pathlib import Path

from crashcheck.harness.check.program_reads import (CHECK_LOADS, FORKED, HEADER, MAGIC, OPAQUE, RECORD, STORE,
                                         TRUNCATED, Access, collect)


def _log(path: Path, flags: int, mapped: int, recs: list[tuple[int, int, int]], cap: int = 16) -> None:
    path.write_bytes(HEADER.pack(MAGIC, 1, flags, mapped, len(recs), cap)
                     + b"".join(RECORD.pack(*r) for r in recs))


def test_accesses_in_order(tmp_path):
    _log(tmp_path / "c.reads.11", CHECK_LOADS, 0b11, [(0, 8, 64), (STORE | 1, 4, 128), (0, 8, 0)])
    r = collect(tmp_path / "c.reads", {0, 1}, "the checker")
    assert r.ok and r.accesses == [Access(0, 64, 8, False), Access(1, 128, 4, True), Access(0, 0, 8, False)]
    # a process that mapped nothing (a shell, a helper program) does not count against it
    _log(tmp_path / "c.reads.12", CHECK_LOADS, 0, [])
    assert collect(tmp_path / "c.reads", {0}, "the checker").ok


def test_reasons(tmp_path):
    log = tmp_path / "c.reads"
    assert collect(log, {0}, "the checker").why == "the checker is not built with crashcheck-cc: it logged no reads"
    cases = [
        ([(0, 1, [])], "was built with CRASHCHECK_PASS_CHECK_LOADS=0"),
        ([(CHECK_LOADS, 1, []), (CHECK_LOADS, 1, [])], "read the image in 2 processes"),
        ([(CHECK_LOADS | OPAQUE, 0, [])], "opens the image with libpmemobj"),
        ([(CHECK_LOADS, 0, [])], "did not map the image with pmem_map_file"),
        ([(CHECK_LOADS, 0b01, [])], "did not map {image1}"),
        ([(CHECK_LOADS | FORKED, 0b11, [])], "forked child"),
        ([(CHECK_LOADS | TRUNCATED, 0b11, [])], "more of the image than its read log holds"),
    ]
    for logs, words in cases:
        for p in tmp_path.glob("c.reads.*"):
            p.unlink()
        for pid, (flags, mapped, recs) in enumerate(logs):
            _log(tmp_path / f"c.reads.{pid}", flags, mapped, recs)
        r = collect(log, {0, 1}, "recovery")
        assert not r.ok and r.why.startswith("recovery ") and words in r.why, (words, r.why)
