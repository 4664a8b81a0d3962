"""`crashcheck run` starts without the libraries only other paths need (issue 52: a pmreorder
TEST's small program costs about as much as crashcheck's own start-up): Jinja2 (--report), rich
(the fuzz summary), multiprocessing (--jobs) and Hypothesis are imported where they are used."""
import subprocess
import sys


def test_run_subcommand_imports_no_report_rich_or_pool_modules():
    code = ("import sys; from crashcheck.harness.cli import cmd_run; "
            "print(' '.join(m for m in ('jinja2', 'rich', 'multiprocessing', 'hypothesis') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == []
