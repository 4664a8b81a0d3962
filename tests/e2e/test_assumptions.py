"""What a verdict assumed: the failure-atomic unit and the persistency model are
in every record and results file and in the report; a store wider than the unit (a 16-byte store
inside one cache line) is split, and its pieces in a record say which part of which store they
are; `crashcheck fuzz --atomic-unit` changes the unit."""
import pytest
from cli_run import run_cli

from corpus import corpuslib
from crashcheck.crashsim.persistency import ModelOptions
from crashcheck.crashsim.simulate import Simulator
from crashcheck.crashsim.trace import read_trace
from crashcheck.harness.triage import records
from crashcheck.harness.triage.record_formats import check_results
from crashcheck.harness.render.report import render as render_report
from crashcheck.harness.core.settings import Settings


@pytest.fixture(scope="module")
def vec_trace(instrument_built, tmp_path_factory):
    """store_vec_intrin's trace: a 16-byte store at +0x10, inside one cache line."""
    if "avx" not in corpuslib.cpu_flags():
        pytest.skip("this CPU lacks avx")
    out = tmp_path_factory.mktemp("vec")
    [prog] = [p for p in corpuslib.programs() if p.name == "store_vec_intrin"]
    build = corpuslib.compile_one(prog, "O2", out)
    assert not build.error, build.error
    res, tr = corpuslib.run(build.exe, out / "run")
    assert res.returncode == 0, res.stderr
    return read_trace(tr)


def _pieces_of_16(trace, unit):
    sim = Simulator.from_trace(trace, ModelOptions(atomic_unit=unit))
    seq = next(ev.seq for ev in trace.events if ev.kind == "store" and ev.size == 16)
    last = list(sim.crash_points())[-1]
    pieces = [p for p in last.kept([len(u.pieces) for u in last.units]) if p.seq == seq]
    return seq, pieces


def test_a_16_byte_store_in_one_line_is_two_pieces_at_8_and_one_at_16(vec_trace):
    seq, pieces = _pieces_of_16(vec_trace, 8)
    assert [len(p.data) for p in pieces] == [8, 8]
    stores = [records._store(vec_trace, p) for p in pieces]
    assert [(s["size"], s["store_size"], s["part"]) for s in stores] == [(8, 16, 0), (8, 16, 1)]
    seq, pieces = _pieces_of_16(vec_trace, 16)
    assert [len(p.data) for p in pieces] == [16]
    assert "store_size" not in records._store(vec_trace, pieces[0])


def render(results: dict) -> str:
    """The report of RESULTS as `crashcheck report` renders a results file (defaults filled in)."""
    return render_report(check_results({"crashcheck": 1, **results}, "results.json"))


def test_the_report_states_the_assumptions_and_the_pieces():
    settings = Settings(model="adr", atomic_unit=8)
    bug = {"id": "x-torn-update-1", "class": "torn-update", "structure": "x", "model": "adr", "bug": None, "expected": False,
           "occurrences": 1, "detail": "key 1 holds a torn value", "history": ["insert 1 1"],
           "crash": {"index": 0, "event": 3, "kind": "fence", "done": 0, "inflight": 0, "site": None},
           "lost": [{"seq": 2, "off": 24, "size": 8, "data": "00" * 8, "site": None, "store_size": 16, "part": 1}],
           "persisted": [], "assumptions": settings.assumptions(), "replay": "crashcheck replay x.json"}
    html = render({"structures": ["x"], "model": "adr", "strategy": "bounded", "seed": 1, "limit": 8,
                   "stats": {"histories": 1, "crash_points": 1, "states_legal": 1, "states_explored": 1,
                             "elapsed_s": 1.0}, "assumptions": settings.assumptions(), "bugs": [bug]})
    assert "failure-atomic unit 8 bytes: a wider store (even a 16-byte one inside one cache line)" in html
    assert "Assumed: persistency model adr, failure-atomic unit 8 bytes." in html
    assert "(piece 2 of a 16-byte store)" in html


def test_invariant_violation_with_right_contents_is_not_shown_as_same():
    bug = {"id": "x-invariant-violation-1", "class": "invariant-violation", "structure": "x", "model": "adr", "bug": None,
           "expected": False, "occurrences": 1, "detail": "node 3 has a NULL child", "history": ["insert 1 1"],
           "crash": {"index": 0, "event": 3, "kind": "fence", "done": 1, "inflight": None, "site": None},
           "expected_states": [[["01", "01"]]], "actual": [["01", "01"]], "replay": "crashcheck replay x.json"}
    html = render({"structures": ["x"], "model": "adr", "strategy": "bounded", "seed": 1, "limit": 8,
                   "stats": {"histories": 1, "crash_points": 1, "states_legal": 1, "states_explored": 1,
                             "elapsed_s": 1.0}, "bugs": [bug]})
    assert "<td>same</td>" not in html
    assert "equal an acceptable state; the invariant-violation is not in the contents but in: node 3 has a NULL child" in html


def test_fuzz_takes_the_unit_and_refuses_one_that_is_no_power_of_two():
    res = run_cli("fuzz", "wort", "--atomic-unit", "3", "--examples", "1")
    assert res.returncode == 2 and "power of two" in res.stderr, res.stderr
    assert res.stderr.count("\n") == 1
