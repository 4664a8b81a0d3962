"""Writes a generated target's sources (params.py draws its knobs; templates/ holds the code).

    write_structure(target, folder) -> the `crashcheck build` arguments of its family
    write_program(target, folder)   -> the crashcheck-cc command line that builds it

A structure family is one folder: its sources, sf_params.h with one #if block per seed of the
family (selected by -DSF_V<seed>, the define of its bugs.json entry), and bugs.json. A program is
one folder with prog.c and sf_params.h."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from .params import ACTIONS, PROGRAM_PHASES, STRUCTURE_PHASES, Target, draw

TEMPLATES = Path(__file__).resolve().parent / "templates"
ROOT = Path(__file__).resolve().parents[2]
CC = ROOT / "instrument" / "bin" / "crashcheck-cc"
NONDET = {"": 0, "time": 1, "pid": 2, "addr": 3}

_env = Environment(loader=FileSystemLoader(str(TEMPLATES)), undefined=StrictUndefined,
                   keep_trailing_newline=True, trim_blocks=False)


def _variant(t: Target, define: str | None) -> dict:
    k = t.knobs
    phases = STRUCTURE_PHASES if t.kind == "structure" else PROGRAM_PHASES
    return {"define": define, "seed": t.seed, "describe": t.describe(), "k": k, "nondet": NONDET[k.nondet],
            "fault": ACTIONS.index(k.fault_action) + 1 if k.fault_phase else 0,
            "phase": phases.index(k.fault_phase) + 1 if k.fault_phase else 0}


def _render(template: str, **ctx) -> str:
    return _env.get_template(template).render(**ctx)


def write_structure(t: Target, folder: Path) -> list[str]:
    """The family of T into FOLDER; returns `crashcheck build` arguments after the name."""
    folder.mkdir(parents=True, exist_ok=True)
    members = [draw(s) for s in t.family]
    (folder / "sf_params.h").write_text(_render(
        "params.h.j2", what=f"structure family {t.name}", variants=[_variant(m, f"SF_V{m.seed}") for m in members]))
    shutil.copy(TEMPLATES / "sf_hostile.h", folder / "sf_hostile.h")
    bugs = [{"name": m.bug_name, "define": f"SF_V{m.seed}",
             "class": "lost-durable-write" if m.knobs.bug else "none",
             "description": f"self-fuzz seed {m.seed}: {m.describe()}"} for m in members]
    (folder / "bugs.json").write_text(json.dumps(bugs, indent=1) + "\n")
    cpp = t.lang == "c++"
    ctx = dict(name=t.name, cpp=cpp, include_cpp=t.include_cpp, own_new=t.own_new, ext="" if cpp else "static ")
    if not cpp:
        (folder / "adapter.c").write_text(_render("table.j2", file="adapter.c", **ctx)
                                          + _render("adapter.j2", file="adapter.c", comment="/*", **ctx)
                                          .replace("adapter table\n", "adapter table */\n", 1))
        return ["--adapter", str(folder / "adapter.c")]
    (folder / "table.h").write_text(_render("table.h.j2"))
    (folder / "table.cpp").write_text(_render("table.j2", file="table.cpp", **ctx))
    (folder / "adapter.cpp").write_text(_render("adapter.j2", file="adapter.cpp", comment="//", **ctx))
    if t.include_cpp:
        (folder / "nodes.cpp").write_text(_render("nodes.cpp.j2"))
    args = [str(folder / "table.cpp"), "--adapter", str(folder / "adapter.cpp")]
    # the old style brings its own operators; the others ask crashcheck to put `new` in the pool
    return args if t.own_new else [*args, "--pm-malloc"]


def write_program(t: Target, folder: Path) -> list[str]:
    """T's program into FOLDER; returns the command that builds FOLDER/prog."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sf_params.h").write_text(_render("params.h.j2", what=f"program {t.name}",
                                                variants=[_variant(t, None)]))
    shutil.copy(TEMPLATES / "sf_hostile.h", folder / "sf_hostile.h")
    (folder / "prog.c").write_text(_render("program.c.j2", seed=t.seed, describe=t.describe(),
                                           mapper=t.mapper, markers=t.markers))
    cmd = [str(CC), "-O1", "-g", "-pthread", f"-I{folder}", str(folder / "prog.c"), "-o", str(folder / "prog")]
    return [*cmd, "-lpmem"] if t.mapper == "libpmem" else cmd
