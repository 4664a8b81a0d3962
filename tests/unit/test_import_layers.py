"""The rooms of harness/ import only downward (the contract in pyproject.toml, docs/architecture.md).

lint-imports checks the real tree; the second test proves the contract bites: a copy of the tree
with one back arrow (the core importing the CLI) must be refused, naming the broken contract."""
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# lint-imports, run with -S: without the .pth files of site-packages, so the editable install's
# import hook (which maps crashcheck to this checkout) cannot stand in for ROOT's crashcheck/ (the
# copy's, in the second test); site-packages itself stays on the path for import-linter.
LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
SITE = sysconfig.get_paths()["purelib"]


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-S", "-c", LINT, "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": f"{root}:{SITE}", "PATH": "/usr/bin:/bin"})


def test_the_tree_keeps_its_layers():
    res = lint(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "harness rooms import only downward KEPT" in res.stdout
    assert "crashsim and specs never import harness KEPT" in res.stdout


def test_a_back_arrow_is_refused(tmp_path):
    for part in ("harness", "crashsim", "specs"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("runner", "__pycache__"))
    # the namespace package with its links (crashcheck/harness -> ../harness, ...): to the copies
    shutil.copytree(ROOT / "crashcheck", tmp_path / "crashcheck", symlinks=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    core = tmp_path / "harness" / "core" / "counts.py"
    core.write_text(core.read_text() + "\nfrom crashcheck.harness.cli import options  # a back arrow\n")
    res = lint(tmp_path)
    assert res.returncode != 0
    assert "harness rooms import only downward BROKEN" in res.stdout
    assert "crashcheck.harness.core.counts -> crashcheck.harness.cli.options" in res.stdout
