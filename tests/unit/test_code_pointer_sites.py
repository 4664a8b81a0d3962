"""Code addresses stored in PM (issue 34): the pass flags the site of a store of a vtable pointer
(a constructor's), of a function pointer and of one read from a constant table of functions, and
nothing else; the checker turns such a store in a trace into one `code-pointer-in-pm` finding
naming it; two runs that differ only in those addresses (ASLR) are not nondeterministic.
Driven by tests/corpus/support/code_pointers.cpp at -O0 and -O2."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from corpus import corpuslib
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.check.code_pointers import CLASS, code_pointer_findings
from crashcheck.harness.check.determinism import trace_difference

SRC = corpuslib.CORPUS / "support" / "code_pointers.cpp"


def _line(tag: str) -> int:
    return next(i for i, text in enumerate(SRC.read_text().splitlines(), 1) if f"/* @{tag} */" in text)


@pytest.fixture(scope="module", params=["O0", "O2"])
def built(request, instrument_built, tmp_path_factory):
    exe = tmp_path_factory.mktemp("codeptr") / f"code_pointers.{request.param}"
    res = subprocess.run([str(corpuslib.CXX), f"-{request.param}", "-Wall", "-Werror", "-I", str(corpuslib.CORPUS),
                          str(SRC), "-o", str(exe)], capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if k != "CRASHCHECK_PASS_STATS"})
    assert res.returncode == 0, res.stderr
    return request.param, exe


def _trace(exe: Path, workdir: Path):
    res, tr = corpuslib.run(exe, workdir)
    assert res.returncode == 0, res.stderr
    return read_trace(tr)


def test_the_pass_flags_stores_of_code_addresses_and_nothing_else(built, tmp_path):
    level, exe = built
    trace = _trace(exe, tmp_path)
    stores = [(trace.site(ev.site), ev) for ev in trace.events if ev.kind == "store"]
    flagged = {(s.func, s.line) for s, _ in stores if s.code_pointer}
    plain = {(s.func, s.line) for s, _ in stores if not s.code_pointer}
    assert ("main", _line("fn")) in flagged and ("main", _line("table")) in flagged
    assert ("main", _line("plain")) in plain and ("main", _line("number")) in plain
    if level == "O2":
        # the constructor is inlined: its one vtable pointer store (Square's), at the placement new
        [ctor] = [s for s, _ in stores if s.code_pointer and s.func == "Square"]
        assert (ctor.inlined_func, ctor.inlined_line) == ("main", _line("vptr"))
        assert len(flagged) == 3
    else:
        # not inlined: the constructors' own stores (Shape's, then Square's vtable pointer)
        assert {f for f, _ in flagged} == {"main", "Shape", "Square"}
        assert sum(1 for s, _ in stores if s.code_pointer) == 4
    # the side, stored by the constructor beside its vtable pointer, is no code address
    assert any(ev.data == (3).to_bytes(8, "little") and not s.code_pointer for s, ev in stores)
    assert trace.site(stores[0][1].site).as_dict().get("code_pointer") in (True, None)


def test_one_finding_names_the_stores_and_addresses_alone_are_no_nondeterminism(built, tmp_path):
    level, exe = built
    first, second = _trace(exe, tmp_path / "a"), _trace(exe, tmp_path / "b")
    [f] = code_pointer_findings(first)
    assert f.cls == CLASS and f.point is None
    site = first.site(first.events[f.stores[0]].site)
    assert f"code_pointers.cpp:{site.line} in {site.func}" in f.detail
    if level == "O2":
        assert site.inlined_line == _line("vptr")
    assert "invalid after a restart" in f.detail
    assert len(f.stores) == (3 if level == "O2" else 4)
    assert all(first.site(first.events[s].site).code_pointer for s in f.stores)
    assert trace_difference(first, second) is None
