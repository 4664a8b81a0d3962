"""A one-operation trace for unit tests of crash states (tests/unit/test_unmask.py, test_keeping.py):
the given stores, none flushed, then a link published with a flush and a fence (a.c:11-13)."""
from __future__ import annotations

from crashcheck.crashsim.trace import Trace, read_trace
from crashcheck.crashsim.trace_writer import TraceWriter


def published(tmp_path, stores) -> Trace:
    """STORES: (file, line, pool offset, bytes, origin) each, stored in this order."""
    w = TraceWriter(pool_size=4096)
    sites = [w.site(file, line, "put") for file, line, *_ in stores]
    link, flush, fence = w.site("a.c", 11, "put"), w.site("a.c", 12, "put"), w.site("a.c", 13, "put")
    w.op_begin(0)
    for site, (_, _, off, data, origin) in zip(sites, stores):
        w.store(off, data, site=site, origin=origin)
    w.store(128, b"p" * 8, site=link)
    w.flush(128, site=flush)
    w.fence(site=fence)
    w.op_end(0)
    path = tmp_path / "t.trace"
    w.write(path)
    return read_trace(path)
