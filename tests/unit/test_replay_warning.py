"""`crashcheck replay RESULTS --warning N` (harness/cli/replay_warning.py): the Nth race warning of
a results file, numbered across its structures as the HTML report numbers them; a number the
file does not have, a warning without its candidate (an older results file) or a file that is
not a results file: one line and exit status 2, never a traceback."""
import json

from crashcheck.harness.cli.main import main
from crashcheck.harness.cli.replay_warning import warnings_of


def _results(tmp_path, rows):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"model": "adr", "seed": 1, "per_structure": rows}))
    return path


def test_warnings_are_numbered_across_structures_in_order():
    rows = [{"structure": "a", "race_warnings": [{"n": 1}, {"n": 2}]}, {"structure": "b"},
            {"structure": "c", "race_warnings": [{"n": 3}]}]
    assert [(r["structure"], w["n"]) for r, w in warnings_of({"per_structure": rows})] == [("a", 1), ("a", 2), ("c", 3)]


def test_bad_warning_numbers_and_files_are_one_line_errors(tmp_path, capsys):
    path = _results(tmp_path, [{"structure": "lfhash", "bug": None, "race_warnings": [{"why": "x"}]}])
    assert main(["replay", str(path), "--warning", "2"]) == 2
    assert "no race warning 2 (the file has 1)" in capsys.readouterr().err
    assert main(["replay", str(path), "--warning", "1"]) == 2
    assert "names no candidate" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["replay", str(bad), "--warning", "1"]) == 2
    err = capsys.readouterr().err
    assert "not a results file" in err and "Traceback" not in err
