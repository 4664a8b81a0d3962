"""The oracle: what every crashcheck command must do on a legal target, however hostile.

judge(outcome) -> (verdict, reason): "ok", "internal" (crashcheck said "internal error" or printed a
Python traceback: the class of error issue 49 is about) or "oracle" (any other promise broken).

The promises, for every command run by drive.py:
  - it ends within its deadline (the budget given plus GRACE_S, or a fixed one for commands without
    a budget); a command killed at its deadline is an oracle failure, never a pass;
  - its exit status is one the docs define (0, 1 or 2; replay also its own statuses), never a
    signal's;
  - exit 2 comes with exactly one `crashcheck: error...` line (the one clear line);
  - no Python traceback and no "internal error" anywhere in its stdout or stderr;
  - a run (fuzz, run) that ended 0 or 1, or 2 after an internal error, wrote its results file,
    and the file is JSON with the format field;
  - a legal target builds, its traces read back (exit 0), and a results file a run wrote renders;
  - replay of a record exits 0 ("fixed") only when the code changed: never for these unchanged
    targets, above all never for a nondeterministic one; and a record of a deterministic target
    (no time/pid/address values, no threads) replays (exit 2 "cannot replay" is a failure);
  - its own output stays readable: at most FLOOD_BYTES printed (the target's floods stay out).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

GRACE_S = 45.0                     # start-up, probe, shrinking and writing past the budget, loaded box
FLOOD_BYTES = 1 << 20
REPLAY_STATUSES = (0, 1, 2, 3)     # 3: a status of its own for "cannot tell" (issue 49 point 6)
# findings whose replay may pass by timing alone (a hang under a lighter load): their "fixed" is no lie
HANG_CLASSES = {"operation-hang", "recovery-hang", "checker-hang"}
TRACEBACK = re.compile(r"Traceback \(most recent call last\):\s*\n\s+File \"")
EXCEPTION_GROUP = re.compile(r"^\s*\+?-?\s*\|?\s*(Base)?ExceptionGroup: ", re.M)
ERROR_LINE = re.compile(r"^crashcheck: (?:[\w -]*: )?error\b", re.M)


@dataclass
class Outcome:
    """One command run on one target, as drive.py saw it."""
    seed: int
    sub: str                        # the subcommand's label in the counts ("fuzz --jobs 2", "replay" ...)
    argv: list[str]
    status: int | None              # None: killed at its deadline
    elapsed: float
    deadline: float
    stdout: str                     # head and tail, at most a few kB each
    stderr: str
    out_bytes: int                  # what it printed in all
    results: Path | None = None     # the results file it was asked to write
    expect_ok: bool = False         # a command that must exit 0 on this input (build, report, a trace)
    replay_class: str = ""          # replay: the record's class
    nondeterministic: bool = False  # the target draws values from time, pid or addresses, or runs threads
    flood_ok: bool = False          # trace show of a large trace prints a lot by design
    notes: list[str] = field(default_factory=list)


def _internal(o: Outcome) -> str | None:
    text = o.stdout + "\n" + o.stderr
    if TRACEBACK.search(text):
        return "Python traceback"
    if EXCEPTION_GROUP.search(text):
        return "exception group printed"
    if "internal error" in text.lower():
        line = next((ln for ln in o.stderr.splitlines() if "internal error" in ln.lower()), "")
        return f"internal error: {line.strip()[:300]}"
    return None


def _results_problem(path: Path) -> str | None:
    if not path.exists():
        return f"no results file {path.name}"
    try:
        data = json.loads(path.read_text())
    except (ValueError, UnicodeDecodeError) as exc:
        return f"results file {path.name} is not JSON ({exc})"
    if not isinstance(data, dict) or "crashcheck" not in data:
        return f"results file {path.name} has no format field"
    return None


def judge(o: Outcome) -> tuple[str, str]:
    internal = _internal(o)
    if internal:
        if o.results is not None and o.status == 2 and (problem := _results_problem(o.results)):
            internal += f"; and {problem}"
        return "internal", internal
    if o.status is None:
        return "oracle", f"did not end within {o.deadline:g} s (killed)"
    if o.status < 0:
        return "oracle", f"died of signal {-o.status}"
    allowed = REPLAY_STATUSES if o.sub == "replay" else (0, 1, 2)
    if o.status not in allowed:
        return "oracle", f"exit status {o.status}"
    errors = ERROR_LINE.findall(o.stderr)
    if o.status == 2 and len(errors) != 1:
        tail = o.stderr.strip().splitlines()[-1:] or ["(no stderr)"]
        return "oracle", f"exit 2 with {len(errors)} `crashcheck: error` lines (last line: {tail[0][:200]})"
    if o.expect_ok and o.status != 0:
        return "oracle", f"exit {o.status} on a legal input: {_last_line(o.stderr)}"
    if o.results is not None and o.status in (0, 1) and (problem := _results_problem(o.results)):
        return "oracle", problem
    if o.sub == "replay" and o.status == 0 and o.replay_class not in HANG_CLASSES:
        why = "a nondeterministic target" if o.nondeterministic else "an unchanged target"
        return "oracle", f"replay says fixed (exit 0) of {why} ({o.replay_class})"
    if o.sub == "replay" and o.status == 2 and not o.nondeterministic and o.replay_class not in HANG_CLASSES:
        return "oracle", f"a record just written does not replay ({o.replay_class}): {_last_line(o.stderr)}"
    if o.out_bytes > FLOOD_BYTES and not o.flood_ok:
        return "oracle", f"printed {o.out_bytes} bytes"
    return "ok", ""


def _last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1][:300] if lines else "(no stderr)"
