"""The crash oracle: is what recovery left acceptable for this history and crash point?

Owns the acceptance rule of the design (durable linearizability for one thread) and the bug
classes. A crash while operation i is in flight may leave operations 0..i-1 applied and operation
i applied or not; a crash between operations allows exactly one state. After recovery the structure
must (1) not crash, hang or break its invariants, (2) dump exactly one acceptable state, (3) keep
every allocated PM object reachable (leaks are judged by specs/leaks.py), and (4) keep behaving like
the model in a follow-up workload. Every finding gets exactly one class.

Designing classes: the class names the first thing a person must fix, so a dump that differs from
the closest acceptable state in several keys is classed by its most telling difference: a key
that a completed delete removed and that came back (resurrected-delete), then a key or value that
completed operations made durable and that is gone or older (lost-durable-write), then a value
mixed from two written values (torn-update), then anything else (wrong-value).
"""
from __future__ import annotations

import json
import signal
from dataclasses import dataclass, field

from specs.ordered_map import EMPTY, Op, State, describe, key_text, prefix_states, run, value_text

CLASSES = (
    "lost-durable-write",
    "torn-update",
    "resurrected-delete",
    "wrong-value",
    "invariant-violation",
    "recovery-crash",
    "recovery-hang",
    "leak",
    "post-recovery-divergence",
    # The crash-free run itself: an operation (or the set-up before operation 0) died (a signal,
    # an exit status, exit(0) before the history ended, the memory limit, killing its parent,
    # leaving a process running), or did not finish in time (a loop, a sleep, stopping itself).
    "operation-crash",
    "operation-hang",
)

# A recovery that kills the checker running it (kill(getppid(), ...)) is a `recovery-crash`, not a
# class of its own: what a person must fix is still that recovery does not finish normally, and the
# detail says what it did. The runner client answers such a state "runner-died" and carries on.
STOP_SIGNALS = (19, 20, 21, 22)      # SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU


@dataclass(frozen=True)
class CrashPoint:
    """Where the crash happened in terms of the history: DONE operations completed, and the
    index of the operation in flight (None between operations)."""
    done: int
    inflight: int | None = None


@dataclass
class Verdict:
    ok: bool
    cls: str | None = None
    detail: str = ""
    expected: list[State] = field(default_factory=list)
    actual: State | None = None
    matched: State | None = None        # the acceptable state the dump equals, if any
    group: str = ""                     # when set: what makes findings of this verdict one bug


def acceptable(ops: list[Op], point: CrashPoint, states: list[State] | None = None) -> list[State]:
    """The states recovery may leave: after 0..done-1, and also after the op in flight."""
    states = states if states is not None else prefix_states(ops)
    out = [states[point.done]]
    if point.inflight is not None and states[point.inflight + 1] != out[0]:
        out.append(states[point.inflight + 1])
    return out


def dump_state(dump: list[list[str]]) -> State:
    """A driver dump ([["key hex", "value hex"], ...]) as a model state (sorted)."""
    return tuple(sorted((bytes.fromhex(k), bytes.fromhex(v)) for k, v in dump))


def _is_torn(value: bytes, written: set[bytes], unit: int = 8) -> bool:
    """VALUE is made of UNIT-byte pieces of values written to the key (but is none of them)."""
    if len(value) <= unit:
        return False
    pieces = [value[i:i + unit] for i in range(0, len(value), unit)]
    return all(any(w[i * unit:(i + 1) * unit] == p for w in written if len(w) == len(value))
               for i, p in enumerate(pieces))


def _classify_mismatch(ops: list[Op], states: list[State], point: CrashPoint, expected: list[State],
                       actual: State) -> tuple[str, str]:
    """The class and a one-line explanation of a dump that equals no acceptable state."""
    horizon = point.done + (1 if point.inflight is not None else 0)
    written: dict[bytes, set[bytes]] = {}
    deleted: set[bytes] = set()
    for op in ops[:horizon]:
        if op.kind in ("insert", "update"):
            written.setdefault(op.key, set()).add(op.value)
    for before, after in zip(states[:point.done], states[1:point.done + 1]):
        deleted |= set(dict(before)) - set(dict(after))

    def diffs(state: State) -> list[tuple[str, bytes]]:
        want, got = dict(state), dict(actual)
        out = [("extra", k) for k in got if k not in want]
        out += [("missing", k) for k in want if k not in got]
        out += [("changed", k) for k in want if k in got and want[k] != got[k]]
        return out

    closest = min(expected, key=lambda s: len(diffs(s)))
    want, got = dict(closest), dict(actual)
    found = diffs(closest)
    order = {"resurrected-delete": 0, "lost-durable-write": 1, "torn-update": 2, "wrong-value": 3}
    best: tuple[str, str] | None = None
    for what, k in found:
        ktext = key_text(k)
        if what == "extra":
            if k in deleted and k not in want:
                cand = ("resurrected-delete", f"key {ktext} was deleted by a completed operation "
                        f"but is back with value {value_text(got[k])}")
            else:
                cand = ("wrong-value", f"key {ktext} is present but was never inserted")
        elif what == "missing":
            cand = ("lost-durable-write", f"key {ktext} (value {value_text(want[k])}) is missing")
        else:
            older = written.get(k, set()) - {want[k]}
            if got[k] in older:
                cand = ("lost-durable-write", f"key {ktext} has the older value {value_text(got[k])} "
                        f"instead of {value_text(want[k])}")
            elif _is_torn(got[k], written.get(k, set())):
                cand = ("torn-update", f"key {ktext} holds {value_text(got[k])}, torn from written values")
            else:
                cand = ("wrong-value", f"key {ktext} holds {value_text(got[k])}, "
                        f"expected {value_text(want[k])}")
        if best is None or order[cand[0]] < order[best[0]]:
            best = cand
    assert best is not None
    return best


def end_key(status: str | None, sig: int | None, code: int | None) -> str:
    """How a process ended, in the words that group findings (no numbers that vary from run to
    run); harness/supervise.py's RunEnd.how_key uses the same words for the crash-free run."""
    if status == "timeout":
        return "stopped" if sig in STOP_SIGNALS else "timeout"
    if status == "signal":
        return signal_name(sig)
    if status == "exit":
        return f"exit {code}"
    if status == "oom":
        return "memory limit"
    if status == "runner-died":
        return "parent-killed"
    return "exit 0 early"


def signal_name(sig: int | None) -> str:
    try:
        return f"{signal.Signals(sig).name} (signal {sig})"
    except (ValueError, TypeError):
        return f"signal {sig}"


def _end_words(status: str | None, sig: int | None, code: int | None) -> str:
    if status == "timeout":
        return (f"stopped itself ({signal_name(sig)})" if sig in STOP_SIGNALS
                else "did not finish within the time limit")
    if status == "signal":
        return f"died of {signal_name(sig)}"
    if status == "exit":
        return f"exited with status {code}"
    if status == "oom":
        return "ran out of memory"
    if status == "runner-died":
        return "killed the checker running it (its parent process)"
    return "exited with status 0 before it was done"


def _partial_check(result: dict) -> dict | None:
    """The check JSON of a check that died or hung in its follow-up operations: the driver flushes
    it up to `"followup": [` and after each follow-up result (trees/common/check.c), so the
    runner's `output` holds everything but the end. None when it does not end that way."""
    out = result.get("output") or ""
    if not out.startswith('{"recovered": true') or '"followup": [' not in out:
        return None
    try:
        body = json.loads(out.rstrip() + "]}")
    except ValueError:
        return None
    return body if isinstance(body, dict) and isinstance(body.get("followup"), list) else None


def judge_recovery(ops: list[Op], point: CrashPoint, result: dict,
                   followup: list[Op] | None = None, states: list[State] | None = None) -> Verdict:
    """Judge one checked crash state.

    RESULT is the runner's answer for the state: {"status": "ok"|"signal"|"exit"|"timeout"|"oom",
    "signal": n, "exit": n, "result": <the driver's check JSON or None>, "stderr": "..."}.
    FOLLOWUP are the operations the driver ran after recovery (their results are in
    result["followup"])."""
    states = states if states is not None else prefix_states(ops)
    expected = acceptable(ops, point, states)
    status = result.get("status")
    body = result.get("result")
    tail = (result.get("stderr") or "").strip().splitlines()[-1:] or [""]
    said = f"; its output ended: {tail[0][-200:]}" if tail[0] else ""
    died_in_followup = None
    if body is None and followup and (status != "ok" or result.get("output")):
        body = _partial_check(result)
        died_in_followup = body is not None
    if died_in_followup:
        pass          # recovery finished and the check wrote its findings: judged below
    elif status == "timeout":
        # The check runs recovery, then the follow-up operations: either may be the one that hangs.
        what = "recovery (or the follow-up operations after it)"
        if result.get("signal") in STOP_SIGNALS:
            return Verdict(False, "recovery-hang", f"{what} stopped itself (signal {result.get('signal')})"
                           + said, expected)
        return Verdict(False, "recovery-hang", f"{what} did not finish within the time limit" + said, expected)
    elif status == "runner-died":
        return Verdict(False, "recovery-crash", "recovery killed the checker running it (its parent "
                       "process died while this state was checked; a new checker took over)", expected)
    elif status in ("signal", "oom") or (status == "exit" and body is None):
        how = (f"signal {result.get('signal')}" if status == "signal" else
               "the memory limit" if status == "oom" else f"exit status {result.get('exit')}")
        return Verdict(False, "recovery-crash", f"recovery died with {how}{said}", expected)
    elif status == "ok" and body is None:
        return Verdict(False, "recovery-crash", "recovery exited with status 0 before the check wrote "
                       "its result" + said, expected)
    elif result.get("stray"):
        return Verdict(False, "recovery-crash", "recovery left a process running (the checker killed it)"
                       + said, expected)
    if body is None or not body.get("recovered", False):
        return Verdict(False, "recovery-crash",
                       f"recovery reported failure (status {body.get('recover_status') if body else '?'})",
                       expected)
    if body.get("violations"):
        first = body["violations"][0]
        more = f" (+{len(body['violations']) - 1} more)" if len(body["violations"]) > 1 else ""
        return Verdict(False, "invariant-violation", f"{first}{more}", expected, dump_state(body["dump"]))
    actual = dump_state(body.get("dump", []))
    if actual not in expected:
        cls, detail = _classify_mismatch(ops, states, point, expected, actual)
        return Verdict(False, cls, detail, expected, actual)
    if followup:
        _, want = run(followup, actual)
        got = body.get("followup", [])
        for i, (w, g) in enumerate(zip(want, got)):
            if w != g:
                return Verdict(False, "post-recovery-divergence",
                               f"after recovery, `{followup[i].text()}` returned `{g}`, the model `{w}`",
                               expected, actual, actual)
        if died_in_followup and len(got) < len(want):
            # Recovery left an acceptable state and an ordinary operation on it then died or hung:
            # the same misbehaviour as in a crash-free run, so the same class and the same group.
            op = followup[len(got)]
            cls = "operation-hang" if status == "timeout" else "operation-crash"
            key = end_key(status, result.get("signal"), result.get("exit"))
            return Verdict(False, cls, f"after recovery, the follow-up `{op.text()}` "
                           f"{_end_words(status, result.get('signal'), result.get('exit'))}{said}",
                           expected, actual, actual,
                           group=key if key == "parent-killed" else f"{op.kind}: {key}")
        if len(got) != len(want):
            return Verdict(False, "post-recovery-divergence",
                           f"after recovery the follow-up ran {len(got)} of {len(want)} operations",
                           expected, actual, actual)
    return Verdict(True, expected=expected, actual=actual, matched=actual)


__all__ = ["CLASSES", "CrashPoint", "Verdict", "acceptable", "dump_state", "judge_recovery", "EMPTY",
           "describe"]
