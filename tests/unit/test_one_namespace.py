"""Every Python file of the repository reaches crashcheck's code as crashcheck.harness,
crashcheck.crashsim and crashcheck.specs (docs/architecture.md "One namespace"): an import of the
bare top-level names would work in a checkout (the folders are at the top) and fail once
installed, or load a second copy of a module beside the crashcheck.* one.

Reads every tracked Python file (and the scripts without a suffix that start with a Python #!)
with ast: imports, and strings that are a module path or hold Python code (`python -m X`,
monkeypatch targets, `-c` programs)."""
import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OLD = ("harness", "crashsim", "specs")          # the folders, never importable under these names
# a string naming a module path (the old name of a module) or holding an import of one
MODULE_STRING = re.compile(r"^(%s)(\.\w+)+(:\w+)?$" % "|".join(OLD))
# an import statement inside a string of code: at its start or after `;` (not prose "... import specs")
CODE_STRING = re.compile(r"(?:^|[;\n])[ \t]*(?:from\s+(?:%s)[\w.]*\s+import\b|import\s+(?:%s)\b)"
                         % ("|".join(OLD), "|".join(OLD)))


def python_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    out = []
    for name in filter(None, names):
        p = ROOT / name
        if p.is_symlink() or not p.is_file():
            continue
        if p.suffix == ".py":
            out.append(p)
        elif not p.suffix and p.read_bytes()[:64].startswith(b"#!") and b"python" in p.read_bytes()[:64]:
            out.append(p)
    return out


def top_level_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"{node.lineno}: import {a.name}" for a in node.names if a.name.split(".")[0] in OLD]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                and node.module.split(".")[0] in OLD:
            found.append(f"{node.lineno}: from {node.module} import ...")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if MODULE_STRING.match(node.value) or CODE_STRING.search(node.value):
                found.append(f"{node.lineno}: {node.value[:60]!r}")
    return found


def test_no_file_imports_the_bare_top_level_names():
    files = python_files()
    assert len(files) > 100, "the walk found too few Python files to mean anything"
    bad = {str(p.relative_to(ROOT)): uses for p in files if (uses := top_level_uses(p))}
    assert not bad, ("import crashcheck.harness / crashcheck.crashsim / crashcheck.specs instead "
                     f"(the rename script does it): {bad}")


def test_the_check_sees_each_kind_of_use(tmp_path):
    # the checker itself must bite: each kind of use it looks for, written as a file would
    samples = {
        "import %s.cli.main": "import",
        "from %s.core import errors": "from",
        "x = '%s.cli.main'": "module string",
        "y = 'import sys; from %s.cli import options'": "code string",
    }
    for text, kind in samples.items():
        for name in OLD:
            f = tmp_path / "sample.py"
            f.write_text(text % name + "\n")
            assert top_level_uses(f), f"{kind} of {name} not seen"
    f.write_text("import crashcheck.harness.cli.main\nspecs = []\nspecs.append(1)\nz = 'the specs of a run'\n"
                 "w = 'crashsim and specs never import harness'\n")
    assert top_level_uses(f) == []
