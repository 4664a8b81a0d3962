"""The crash oracle: is what recovery left acceptable for this history and crash point?

Owns the acceptance rule of the design for one thread, over any crashcheck.specs.model.Model, and the bug
classes. A crash while operation i is in flight may leave operations 0..i-1 applied and operation
i applied or not; a crash between operations allows exactly the state after the completed ones
(for a nondeterministic model: every state it may be in there). After recovery the structure
must (1) not crash, hang or break its invariants, (2) dump exactly one acceptable state, (3) keep
every allocated PM object reachable (leaks are judged by specs/leaks.py), and (4) keep behaving like
the model in a follow-up workload. Every finding gets exactly one class.

What a dump that equals no acceptable state is called belongs to the model (Model.classify): the
ordered map tells resurrected deletes, lost durable writes and torn updates apart
(specs/ordered_map.py), a model without its own classes says wrong-value. Nothing here knows
what a map is: the map is only the default model, so that the call signature harness uses
(`judge_recovery(ops, point, result, followup, states)`) keeps working. Several threads are
judged by `judge_durable` (durable linearizability, specs/linearizability.py), with the same
recovery-failure and follow-up rules.
"""
from __future__ import annotations

import json
import os
import re
import signal
from dataclasses import dataclass, field
from typing import Any, Sequence

from crashcheck.specs import linearizability as _lin
from crashcheck.specs import model as _model
from crashcheck.specs import ordered_map
from crashcheck.specs.history import History
from crashcheck.specs.model import Mismatch, Model
from crashcheck.specs.ordered_map import EMPTY, describe

# The classes of a crash state's verdict (harness builds its class order and exceptions from them).
CLASSES = (
    "lost-durable-write",
    "torn-update",
    "resurrected-delete",
    "wrong-value",
    # A failure whose crash state persisted part of a store wider than the failure-atomic unit,
    # and passes with that store whole or not at all (harness/check/torn_store.py): decided from
    # the trace, never by a verdict.
    "torn-store",
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
    # The traced run stored a code address (a vtable or function pointer) into PM: invalid after
    # a restart, so its crash states are not checked (harness/check/code_pointers.py).
    "code-pointer-in-pm",
    # The same history, run twice, did not do the same (a different trace, result or finding):
    # the structure lets the clock, rand(), addresses or uninitialised memory into what it writes
    # or returns (harness/check/determinism.py). Not a verdict on a crash state: found by harness/run/search.py.
    "nondeterminism",
)

# A recovery that kills the checker running it (kill(getppid(), ...)) is a `recovery-crash`, not a
# class of its own: what a person must fix is still that recovery does not finish normally, and the
# detail says what it did. The runner client answers such a state "runner-died" and carries on.
STOP_SIGNALS = (19, 20, 21, 22)      # SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU

# Findings of several threads (specs/linearizability.py); not in CLASSES until harness reports them.
# persistency-race: a load of another thread's store not yet durable, acted upon, confirmed by a
# crash that loses that store (harness/check/persistency_race.py)
CONCURRENT_CLASSES = ("linearizability-violation", "deadlock", "livelock", "persistency-race")


@dataclass(frozen=True)
class HistoryPoint:
    """What the oracle knows of a crash: where it happened in terms of the history, DONE
    operations completed and the index of the operation in flight (None between operations).
    The crash point in trace terms (event, pending stores) is crashcheck.crashsim.simulate.CrashPoint."""
    done: int
    inflight: int | None = None


@dataclass
class Verdict:
    ok: bool
    cls: str | None = None
    detail: str = ""
    expected: list[Any] = field(default_factory=list)   # the acceptable states
    actual: Any = None                  # the recovered state (None if recovery did not finish)
    matched: Any = None                 # the acceptable state the dump equals, if any
    checked: bool = True                # False: a search budget ran out (ok is False, cls None):
    #                                     not checked, neither a pass nor a bug
    witness: tuple[int, ...] = ()       # judge_durable: the linearization explaining the state
    group: str = ""                     # when set: what makes findings of this verdict one bug
    followup_outputs: list[str] = field(default_factory=list)   # what the follow-up returned, as
    #                                     far as it ran (all of it, or up to an operation that died)
    followup: list[Any] = field(default_factory=list)   # the operations run after recovery
    recovered: str = ""                 # which acceptable state the dump matched, in words


def _sets(model: Model, ops: Sequence[Any], states: Sequence[Any] | None,
          outputs: Sequence[Any] | None) -> list[list[Any]]:
    """The states possible after each prefix: from STATES (one per prefix, as harness passes them
    for a deterministic model) or computed from the model (narrowed by OUTPUTS if given)."""
    if states is not None:
        return [[s] for s in states]
    return _model.prefix_states(model, ops, outputs)


def _acceptable(model: Model, sets: list[list[Any]], point: HistoryPoint) -> list[Any]:
    out = list(sets[point.done])
    if point.inflight is not None:
        out += sets[point.inflight + 1]
    return model.dedup(out)


def _expected(model: Model, ops: Sequence[Any], point: HistoryPoint, states: Sequence[Any] | None,
              outputs: Sequence[Any] | None, sets: Sequence[Sequence[Any]] | None = None
              ) -> tuple[list[Any], list[list[Any]] | None]:
    """The acceptable states, and the per-prefix state sets if they had to be computed (with
    STATES or SETS given, only the two prefixes needed are read: this runs once per crash state)."""
    if sets is not None:
        return _acceptable(model, sets, point), sets
    if states is None:
        sets = _sets(model, ops, None, outputs)
        return _acceptable(model, sets, point), sets
    out = [states[point.done]]
    if point.inflight is not None and not model.equal(states[point.inflight + 1], out[0]):
        out.append(states[point.inflight + 1])
    return out, None


def acceptable(ops: Sequence[Any], point: HistoryPoint, states: Sequence[Any] | None = None, *,
               model: Model | None = None, outputs: Sequence[Any] | None = None) -> list[Any]:
    """The states recovery may leave: after 0..done-1, and also after the op in flight. STATES,
    if given, holds one state per prefix (states[i] after ops 0..i-1); MODEL defaults to the
    ordered map; OUTPUTS (the crash-free run's outputs) narrow a nondeterministic model."""
    model = model or ordered_map.MODEL
    return _expected(model, ops, point, states, outputs)[0]


def dump_state(dump: list[list[str]], model: Model | None = None) -> Any:
    """A driver dump as a model state (default: the ordered map's [["key hex", "value hex"], ...])."""
    return (model or ordered_map.MODEL).dump_state(dump)


def _followup_divergence(model: Model, followup: Sequence[Any] | None, body: dict, expected: list[Any],
                         actual: Any, matched: Any, result: dict | None = None) -> Verdict | None:
    """The verdict when the follow-up's outputs (body["followup"]) leave the model, or when the
    check died or hung in a follow-up operation (RESULT, the runner's answer, says how); None if
    neither. Either way the outputs the follow-up printed are kept in the verdict."""
    if not followup:
        return None
    got = [str(x) for x in body.get("followup", [])]
    bad = _replay_once(model, followup, got, actual)
    if bad is not None:
        i, _, allowed = bad
        want = " or ".join(f"`{model.output_text(o)}`" for o in allowed) or "nothing"
        # nothing changed the state before operation I: the structure's own read disagrees with
        # the dump it gave of the same recovered state (lookup or scan against the dump walk)
        views = (" (a read of the recovered state that disagrees with the structure's own dump)"
                 if _reads_only(model, followup[:i], actual) else f" (follow-up operation {i})")
        return Verdict(False, "post-recovery-divergence",
                       f"after recovery, `{model.op_text(followup[i])}` returned `{got[i]}`, "
                       f"the model {want}{views}", expected, actual, matched, followup_outputs=got)
    if len(got) < len(followup) and result is not None and result.get("status") != "ok":
        return _followup_death(model, followup, got, result, expected, actual, matched)
    if len(got) != len(followup):
        return Verdict(False, "post-recovery-divergence",
                       f"after recovery the follow-up ran {len(got)} of {len(followup)} operations",
                       expected, actual, matched, followup_outputs=got)
    return None


# What the model answers to a follow-up from a recovered state, per follow-up list and state:
# the states of one crash point recover to a few states only, and replaying a continuation (a
# hundred operations) was most of the oracle's time. Keyed by the follow-up's identity (the
# caller makes one list per crash point; the entry keeps it alive, so the id is not reused while
# it is cached) and the recovered state. A state the model answers in more than one way somewhere
# (a nondeterministic model) has no entry: replayed each time, as before.
_EXPECTED: dict[tuple, tuple[Any, list | None]] = {}
_EXPECTED_MAX = 4096


def _model_answers(model: Model, followup: Sequence[Any], state: Any) -> list | None:
    """The outputs the model gives to FOLLOWUP from STATE, if it gives exactly one each time."""
    if model.answers is not None:     # a deterministic model's own fast replay
        return model.answers(state, followup)
    out = []
    for op in followup:
        steps = model.step(state, op)
        if len(steps) != 1:
            return None
        o, state = steps[0]
        out.append(o)
    return out


def _replay_once(model: Model, followup: Sequence[Any], got: list[str], actual: Any):
    """_model.replay of FOLLOWUP from ACTUAL against GOT: None at once when GOT are the model's
    answers there (cached per follow-up and state), else the replay, which says where and how."""
    try:
        key = (id(model), id(followup), actual)
        hit = _EXPECTED.get(key)
    except TypeError:               # a model whose states are not hashable
        hit, key = None, None
    if key is not None and (hit is None or hit[0] is not followup):
        if len(_EXPECTED) >= _EXPECTED_MAX:
            _EXPECTED.clear()
        hit = _EXPECTED[key] = (followup, _model_answers(model, followup, actual))
    want = hit[1] if hit is not None else None
    if want is not None and len(got) <= len(want) and (
            want[:len(got)] == got if model.parse_output is str     # the ordered map's: lines as they are
            else all(w == model.parse_output(g) for w, g in zip(want, got))):
        return None
    return _model.replay(model, followup[:len(got)], got, [actual])


def _reads_only(model: Model, ops: Sequence[Any], state: Any) -> bool:
    """No operation of OPS changes STATE in the model (each may only read it)."""
    return all(model.equal(after, state) for op in ops for _, after in model.step(state, op))


def recovered_words(model: Model, ops: Sequence[Any], point: HistoryPoint, matched: Any,
                    sets: Sequence[Sequence[Any]] | None, states: Sequence[Any] | None = None) -> str:
    """Which of the acceptable states the recovered dump MATCHED, in words: the state after the
    completed operations, or the one with the operation in flight applied (or both, when the
    operation in flight changes nothing there)."""
    def at(n: int) -> list[Any]:
        return list(sets[n]) if sets is not None else [states[n]] if states is not None else []
    done = point.done
    before = model.member(matched, at(done)) is not None
    if point.inflight is None:
        return f"the state after the {done} completed operation{'s' if done != 1 else ''}"
    op = f"`{model.op_text(ops[point.inflight])}`"
    after = model.member(matched, at(point.inflight + 1)) is not None
    if before and after:
        return f"the state after the {done} completed operations (the one in flight, {op}, changes nothing there)"
    if after:
        return f"the state with the operation in flight, {op}, applied"
    return f"the state before the operation in flight, {op} (after the {done} completed)"


def _followup_broke_rules(model: Model, followup: Sequence[Any] | None, body: dict,
                          diverged: Verdict | None, expected: list[Any], actual: Any,
                          matched: Any) -> Verdict | None:
    """The verdict when the structure's check, run again after the follow-up, found broken rules
    (body["followup_violations"], trees/common/check.c), else None. Recovery left a sound
    structure and the follow-up's own operations broke it: a broken rule is the root cause of any
    wrong answer the follow-up gave (DIVERGED, kept in the detail), and it is the same rule as a
    run without crash breaks (one bug: its group is the rule's, as for any broken invariant)."""
    broken = [v for v in body.get("followup_violations") or [] if isinstance(v, str)]
    if not followup or not broken:
        return None
    more = f" (+{len(broken) - 1} more)" if len(broken) > 1 else ""
    also = f"; the follow-up also went wrong: {diverged.detail}" if diverged is not None else ""
    return Verdict(False, "invariant-violation",
                   f"after recovery and the follow-up `{model.op_text(followup[0])}`"
                   f"{f' and {len(followup) - 1} more operations' if len(followup) > 1 else ''}: "
                   f"{broken[0]}{more}{also}", expected, actual, matched,
                   group="rule: " + address_free(broken[0]),
                   followup_outputs=[str(x) for x in body.get("followup", [])])


def _followup_death(model: Model, followup: Sequence[Any], got: list[str], result: dict,
                    expected: list[Any], actual: Any, matched: Any) -> Verdict:
    """Recovery left an acceptable state and the follow-up operation after the GOT ones died or
    hung: the structure diverges from the model after recovery. One bug per kind of operation and
    way of ending (end_key's words), wherever the crash fell; a kill of the checker names no
    operation (it is noticed late)."""
    status, sig, code = result.get("status"), result.get("signal"), result.get("exit")
    op = followup[len(got)]
    tail = (result.get("stderr") or "").strip().splitlines()[-1:] or [""]
    said = f"; its output ended: {tail[0][-200:]}" if tail[0] else ""
    before = (f" (the {len(got)} before it returned {', '.join(f'`{g}`' for g in got[-4:])}"
              f"{' ...' if len(got) > 4 else ''})" if got else "")
    key = end_key(status, sig, code)
    return Verdict(False, "post-recovery-divergence",
                   f"after recovery, follow-up operation {len(got)} `{model.op_text(op)}` "
                   f"{_end_words(status, sig, code)}{before}{said}", expected, actual, matched,
                   group="follow-up: " + (key if key == "parent-killed" else f"{getattr(op, 'kind', '?')}: {key}"),
                   followup_outputs=got)


def end_key(status: str | None, sig: int | None, code: int | None) -> str:
    """How a process ended, in the words that group findings (no numbers that vary from run to
    run); harness/core/supervise.py's RunEnd.how_key uses the same words for the crash-free run."""
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


# trees/common/check.c writes every violation to stderr the moment it is found, with this prefix,
# so a check that dies afterwards (a lookup of a dumped key that crashes) does not take it along
VIOLATION_PREFIX = "check: violation: "


def _early_violations(result: dict) -> list[str]:
    """Violations a check wrote to stderr before its process ended abnormally."""
    return [line[len(VIOLATION_PREFIX):] for line in (result.get("stderr") or "").splitlines()
            if line.startswith(VIOLATION_PREFIX)]


def _last_lines(result: dict, n: int = 3) -> str:
    """'; its last lines: ...' from what the process printed (stderr, else stdout), without the
    violation lines (reported on their own), or ''."""
    for text in (result.get("stderr"), result.get("output")):
        lines = [x.strip() for x in (text or "").splitlines()
                 if x.strip() and not x.startswith(VIOLATION_PREFIX)]
        if lines:
            shown = " | ".join(x[-160:] for x in lines[-n:])
            return f"; its last line{'s' if len(lines[-n:]) > 1 else ''}: {shown}"
    return ""


def _last_line(result: dict) -> str:
    """The last line a recovery printed on stderr, without the violation lines, or ''."""
    lines = [x.strip() for x in (result.get("stderr") or "").splitlines()
             if x.strip() and not x.startswith(VIOLATION_PREFIX)]
    return lines[-1] if lines else ""


# Addresses, hex tokens with a digit (a key byte printed %02x: a3, 1a), a byte after the word
# "byte" (ff), and any other run of digits: what differs between two reports of one broken rule.
_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\b[0-9a-fA-F]*[0-9][0-9a-fA-F]*\b|(?<=byte )[0-9a-fA-F]{2}\b|[0-9]+")


# The site a check reported with CC_VIOLATION (trees/common/cc_tree.h): " [check at FILE:LINE]".
_CHECK_SITE = re.compile(r" \[check at ([^\]\n]+):([0-9]+)\]$")


def address_free(text: str) -> str:
    """A violation's text without addresses and numbers, so one broken rule is one bug across
    histories (Heart's "key byte a3 at position 2" and "key byte 1a at position 4" alike); for a
    violation its check reported with its site (CC_VIOLATION), that site, by file name and line
    (`check at wort_recover.c:190`): the check is the rule, whatever its text says."""
    site = _CHECK_SITE.search(text)
    if site is not None:
        return f"check at {os.path.basename(site.group(1))}:{site.group(2)}"
    return _NUMBERS.sub("?", text)[:80]




def _partial_check(result: dict) -> dict | None:
    """The check JSON of a check that died or hung in its follow-up operations: the driver flushes
    it up to `"followup": [` and after each follow-up result (trees/common/check.c), so the
    runner's `output` holds everything but the end. None when it does not end that way."""
    out = result.get("output") or ""
    if not out.startswith('{"recovered": true') or '"followup": [' not in out:
        return None
    for end in ("]}", "}"):     # cut inside the follow-up's list, or in the check after it
        try:
            body = json.loads(out.rstrip() + end)
        except ValueError:
            continue
        return body if isinstance(body, dict) and isinstance(body.get("followup"), list) else None
    return None


def _failed_recovery(model: Model, result: dict, expected: list[Any], followup: Sequence[Any] | None
                     ) -> tuple[Verdict | None, dict | None, bool]:
    """(the verdict when recovery crashed, hung, failed or broke invariants, else None; the check
    JSON; whether the check died or hung in its follow-up operations after a good recovery)."""
    status = result.get("status")
    body = result.get("result")
    said = _last_lines(result)
    died_in_followup = False
    early = _early_violations(result) if body is None and status != "ok" else []
    if early:
        # The structure's check (or a lookup of the dumped keys) found broken rules, then the
        # process died before it could report them: the broken rule is the finding.
        more = f" (+{len(early) - 1} more)" if len(early) > 1 else ""
        return Verdict(False, "invariant-violation",
                       f"{early[0]}{more}; then the check {_end_words(status, result.get('signal'), result.get('exit'))}"
                       + said, expected, group="rule: " + address_free(early[0])), None, False
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
                           + said, expected), None, False
        return Verdict(False, "recovery-hang", f"{what} did not finish within the time limit" + said, expected), None, False
    elif status == "runner-died":
        return Verdict(False, "recovery-crash", "recovery killed the checker running it (its parent "
                       "process died while this state was checked; a new checker took over)", expected), None, False
    elif status in ("signal", "oom") or (status == "exit" and body is None):
        how = (f"died of {signal_name(result.get('signal'))}" if status == "signal" else
               "ran out of memory (the memory limit)" if status == "oom" else
               f"exited with status {result.get('exit')} before the check wrote its result")
        return Verdict(False, "recovery-crash", f"recovery {how}{said}", expected), None, False
    elif status == "ok" and body is None:
        return Verdict(False, "recovery-crash", "recovery exited with status 0 before the check wrote "
                       "its result" + said, expected), None, False
    elif result.get("stray"):
        return Verdict(False, "recovery-crash", "recovery left a process running (the checker killed it)"
                       + said, expected), None, False
    if body is None or not body.get("recovered", False):
        # Recovery refused the image and said why: one refusal is one bug, wherever the crash
        # fell (harness/check/findings.py finding_group), as one way of dying is.
        why = _last_line(result)
        return Verdict(False, "recovery-crash",
                       f"recovery reported failure (status {body.get('recover_status') if body else '?'})"
                       + (f"; its last line: {why[-160:]}" if why else ""), expected,
                       group="recovery refused: " + address_free(why) if why else ""), None, False
    if body.get("violations"):
        first = body["violations"][0]
        more = f" (+{len(body['violations']) - 1} more)" if len(body["violations"]) > 1 else ""
        return Verdict(False, "invariant-violation", f"{first}{more}", expected,
                       model.dump_state(body.get("dump", []))), None, False
    return None, body, died_in_followup


def judge_recovery(ops: Sequence[Any], point: HistoryPoint, result: dict,
                   followup: Sequence[Any] | None = None, states: Sequence[Any] | None = None, *,
                   model: Model | None = None, outputs: Sequence[Any] | None = None,
                   sets: Sequence[Sequence[Any]] | None = None) -> Verdict:
    """Judge one checked crash state (see _judge_recovery); the verdict also carries the
    operations run after recovery and, when the dump matched an acceptable state, which one."""
    model = model or ordered_map.MODEL
    v = _judge_recovery(ops, point, result, followup, states, model=model, outputs=outputs, sets=sets)
    v.followup = list(followup or [])
    if v.matched is not None:
        if sets is None and states is None:
            sets = _sets(model, ops, None, outputs)
        v.recovered = recovered_words(model, ops, point, v.matched, sets, states)
        if v.cls == "post-recovery-divergence" and v.detail.startswith("after recovery"):
            v.detail = f"after recovery to {v.recovered}" + v.detail[len("after recovery"):]
    return v


def _judge_recovery(ops: Sequence[Any], point: HistoryPoint, result: dict,
                    followup: Sequence[Any] | None = None, states: Sequence[Any] | None = None, *,
                    model: Model | None = None, outputs: Sequence[Any] | None = None,
                    sets: Sequence[Sequence[Any]] | None = None) -> Verdict:
    """Judge one checked crash state.

    RESULT is the runner's answer for the state: {"status": "ok"|"signal"|"exit"|"timeout"|"oom",
    "signal": n, "exit": n, "result": <the driver's check JSON or None>, "stderr": "..."}.
    FOLLOWUP are the operations the driver ran after recovery (their results, as text lines, are
    in result["result"]["followup"]). STATES: one state per prefix, if already computed. MODEL:
    the reference model (default: the ordered map). OUTPUTS: the crash-free run's outputs, which
    pick the branch of a nondeterministic model. SETS: the states possible after each prefix
    (crashcheck.specs.model.prefix_states, computed once per history; overrides STATES and OUTPUTS)."""
    model = model or ordered_map.MODEL
    expected, sets = _expected(model, ops, point, states, outputs, sets)
    failed, body, died_in_followup = _failed_recovery(model, result, expected, followup)
    if failed is not None:
        return failed
    actual = model.dump_state(body.get("dump", []))
    matched = model.member(actual, expected)
    if matched is None:
        if not expected:
            return Verdict(False, "wrong-value", "the crash-free run's outputs are impossible for the "
                           f"{model.name} model, so no state is acceptable", expected, actual)
        if sets is None:
            sets = _sets(model, ops, states, outputs)
        cls, detail = model.classify(Mismatch(model, ops, sets, point.done, point.inflight, expected, actual))
        return Verdict(False, cls, detail, expected, actual)
    # Recovery left an acceptable state: the follow-up must behave like the model (a follow-up
    # operation that died or hung after an acceptable recovery is a post-recovery divergence
    # naming that operation, unless one before it already returned something the model does not).
    diverged = _followup_divergence(model, followup, body, expected, actual, matched,
                                    result if died_in_followup else None)
    broke = _followup_broke_rules(model, followup, body, diverged, expected, actual, matched)
    if broke is not None or diverged is not None:
        return broke or diverged
    return Verdict(True, expected=expected, actual=actual, matched=matched,
                   followup_outputs=[str(x) for x in body.get("followup", [])])


def judge_durable(history: History, result: dict, followup: Sequence[Any] | None = None, *,
                  model: Model | None = None, max_steps: int | None = _lin.DEFAULT_STEPS,
                  timeout: float | None = None) -> Verdict:
    """Judge one checked crash state of a history of several threads (durable linearizability).

    HISTORY holds the operations up to the crash (completed ones with their outputs, and at most
    one in flight per thread); RESULT and FOLLOWUP as for judge_recovery. The recovered state must
    be the model state after a linearization of every completed operation plus any subset of the
    in-flight ones. Classes: what judge_recovery gives for a failed recovery; a history already
    not linearizable before the crash: linearizability-violation; a recovered state no
    linearization explains: the model's classify against the states complete linearizations reach
    (the ordered map: lost-durable-write, resurrected-delete, ...); a budget that ran out: ok False,
    cls None, checked False."""
    model = model or ordered_map.MODEL
    failed, body, died_in_followup = _failed_recovery(model, result, [], followup)
    if failed is not None:
        return failed
    actual = model.dump_state(body.get("dump", []))
    r = _lin.check_durable(history, model, actual, max_steps=max_steps, timeout=timeout)
    if r.unknown:
        return Verdict(False, None, r.reason, [], actual, checked=False)
    if r.illegal and r.stuck is not None:
        return Verdict(False, CONCURRENT_CLASSES[0], r.reason, [], actual)
    if r.illegal:
        expected = list(r.states)
        # name the difference as the model would for one thread running the operations of one
        # linearization of the history in its order (the crash then fell after all of them): the
        # completed ones with their outputs, and the in-flight ones it applied with none known
        # (dropping those would leave outputs that depend on them impossible: `insert k` in
        # flight, then `insert k` -> exists)
        order = [history[i] for i in r.longest]
        ops = [o.op for o in order]
        sets = _model.prefix_states(model, ops, [None if o.pending else o.output for o in order])
        cls, detail = model.classify(Mismatch(model, ops, sets, len(ops), None, expected, actual))
        return Verdict(False, cls, f"{detail} ({r.reason})", expected, actual)
    diverged = _followup_divergence(model, followup, body, [actual], actual, actual,
                                    result if died_in_followup else None)
    broke = _followup_broke_rules(model, followup, body, diverged, [actual], actual, actual)
    if broke is not None or diverged is not None:
        return broke or diverged
    return Verdict(True, expected=[actual], actual=actual, matched=actual, witness=r.witness,
                   followup_outputs=[str(x) for x in body.get("followup", [])])


__all__ = ["CLASSES", "CONCURRENT_CLASSES", "HistoryPoint", "Verdict", "acceptable", "dump_state", "judge_recovery",
           "recovered_words",
           "judge_durable", "EMPTY",
           "describe"]
