"""`--strategy exhaustive` on a crash point it could never finish is refused at once (issue 49 point
3): one 328-byte pmem_memset_persist leaves 2^41 legal states at its fence, and `crashcheck run
--strategy exhaustive` printed nothing for 10 minutes at full CPU. Counting them takes seconds
(what `crashcheck states` does), so the run says so in one line, exit 2, before any state is
checked; `crashcheck fuzz --strategy exhaustive` refuses a history the same way."""
from __future__ import annotations

import contextlib
import io
import subprocess
import time

import pytest

from cli_run import ROOT, run_cli
from crashcheck.harness.cli.main import main
from crashcheck.harness.run import program_run

CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
PROGRAM = r"""
#include <libpmem.h>
int main(int argc, char **argv)
{
	size_t mapped;
	int is_pmem;
	char *pm = pmem_map_file(argv[1], 4096, PMEM_FILE_CREATE, 0644, &mapped, &is_pmem);
	if (!pm)
		return 2;
	pmem_memset_persist(pm + 64, 0xab, 328);	/* 41 pieces in 6 lines, any order per line */
	pmem_unmap(pm, mapped);
	return 0;
}
"""

pytestmark = pytest.mark.usefixtures("instrument_built")


def _one_line(res: subprocess.CompletedProcess) -> str:
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    return lines[0]


def test_run_refuses_exhaustive_on_a_huge_memset_at_once(tmp_path, monkeypatch):
    src = tmp_path / "memset.c"
    src.write_text(PROGRAM)
    exe = tmp_path / "memset"
    subprocess.run([CC, "-O1", src, "-lpmem", "-o", exe], check=True, capture_output=True)
    t0 = time.monotonic()
    res = run_cli("run", "--strategy", "exhaustive", "--json", tmp_path / "r.json",
                  "--checker", "test -f {image}", "--", exe, tmp_path / "pool", timeout=60)
    line = _one_line(res)
    assert time.monotonic() - t0 < 30
    assert line.startswith("crashcheck: error: --strategy exhaustive: the traced run of memset has a crash "
                           "point with 2.20e+12 legal states"), line
    assert "use --strategy lazy" in line
    assert not (tmp_path / "r.json").exists()
    # the same program under lazy checks every legal state and passes, saying how far it is as it
    # goes (a line every PROGRESS_EVERY_S: every crash point here)
    monkeypatch.setattr(program_run, "PROGRESS_EVERY_S", 0.0)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["run", "--checker", "test -f {image}", "--strategy", "lazy", "--json", str(tmp_path / "r.json"),
                     "--", str(exe), str(tmp_path / "pool")])
    assert code == 0, err.getvalue()
    assert "crashcheck: run 1/1: 1 crash points so far, " in err.getvalue()
    assert "executions/s, " in out.getvalue() and " crash states covered/s" in out.getvalue()   # (issue 49 point 11)


def test_fuzz_refuses_exhaustive_on_a_history_it_cannot_finish(trees_built):
    # a HART crash point has ~10^35 legal states
    t0 = time.monotonic()
    res = run_cli("fuzz", "hart", "--strategy", "exhaustive", "--examples", "5", "--quiet", timeout=120)
    line = _one_line(res)
    assert "--strategy exhaustive: a history of" in line and "use --strategy lazy" in line
    assert time.monotonic() - t0 < 60


@pytest.mark.slow
def test_states_of_a_huge_memset_are_counted_exactly_and_shown_short(tmp_path):
    """tests/corpus/memset_huge.c: a 70,000-byte fill leaves about 10^2600 legal states at the end,
    past any float; `crashcheck states` shows it as the summary does (1.23e+2634)."""
    from corpus import corpuslib
    [prog] = [p for p in corpuslib.programs() if p.name == "memset_huge"]
    build = corpuslib.compile_one(prog, "O2", tmp_path)
    assert not build.error, build.error
    res, tr = corpuslib.run(build.exe, tmp_path / "run")
    assert res.returncode == 0, res.stderr
    text = run_cli("states", tr, "--strategy", "bounded", timeout=120)
    assert text.returncode == 0 and "Traceback" not in text.stderr, text.stderr
    total = next(line for line in text.stdout.splitlines() if line.startswith("total:"))
    shown = total.split(", ")[1].split()[0]          # "1.23e+2634"
    assert "e+" in shown and int(shown.split("e+")[1]) > 2000, total
