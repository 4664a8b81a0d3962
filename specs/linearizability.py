"""Linearizability and durable linearizability of a History against any Model.

Owns the two concurrent acceptance rules of the design (Concurrency section):

- `check(history, model)`: the crash-free rule. Is there an order of the operations, consistent
  with real-time order (A before B whenever A returned before B was called), in which every
  completed operation returns what the model returns? Operations that never returned may take
  effect (with any output) or not.
- `check_durable(history, model, recovered)`: the rule after a crash. HISTORY holds the operations
  up to the crash: completed ones and at most one in flight per thread. Is the recovered state the
  model state after a linearization of all completed operations plus any subset of those in flight?

Algorithm: Wing & Gong's search with Lowe's memoisation, as porcupine does. Call and return
entries sit in one list in time order (a call before a return at the same time: a tie overlaps).
The search walks the list; at a call it tries to linearize that operation now (a model step whose
output matches), lifts it out of the list and starts over from the head; at a return of an
operation not yet linearized it backtracks. A configuration (set of linearized operations, model
state) already explored is never explored again. A nondeterministic model is searched over sets
of states (porcupine's powerset view), so one step covers every outcome with the right output.

Results are three-valued (Result.outcome): `ok` with a witness linearization, `illegal` with the
longest linearizable prefix found and the operation that could not be placed after it, or
`unknown` when the step or time budget ran out. A budget never yields `ok` or `illegal`: read
`unknown` as "not checked", never as a pass. Result refuses to be used as a bool for that reason.

Outputs in the History are model outputs (Model.parse_output of the driver's line). States must
be hashable (memoisation keys on ==; Model.equal is used only to compare with the recovered state).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from crashcheck.specs.history import History
from crashcheck.specs.model import Model

OK, ILLEGAL, UNKNOWN = "ok", "illegal", "unknown"
CLASS = "linearizability-violation"       # the bug class a harness gives an `illegal` result

DEFAULT_STEPS = 2_000_000


@dataclass(frozen=True)
class Result:
    outcome: str                                   # OK | ILLEGAL | UNKNOWN
    witness: tuple[int, ...] = ()                  # OK: operation ids in linearization order
    longest: tuple[int, ...] = ()                  # ILLEGAL / UNKNOWN: longest linearizable prefix found
    stuck: int | None = None                       # ILLEGAL: the operation that cannot be placed after it
    reason: str = ""                               # one line for people
    steps: int = 0                                 # search steps spent
    states: tuple = field(default=(), compare=False)   # OK: states the witness may end in;
    #                                                durable ILLEGAL: some states complete linearizations reach

    @property
    def ok(self) -> bool:
        return self.outcome == OK

    @property
    def illegal(self) -> bool:
        return self.outcome == ILLEGAL

    @property
    def unknown(self) -> bool:
        return self.outcome == UNKNOWN

    def __bool__(self) -> bool:
        raise TypeError("a linearizability Result is three-valued: test .ok, .illegal or .unknown")


class _Entry:
    __slots__ = ("id", "is_call", "match", "prev", "next")

    def __init__(self, id: int, is_call: bool) -> None:
        self.id = id
        self.is_call = is_call
        self.match: _Entry | None = None          # a call's return entry (None: never returned)
        self.prev: _Entry | None = None
        self.next: _Entry | None = None


def _entry_list(history: History) -> _Entry:
    """The sentinel head of the doubly linked list of call and return entries in time order."""
    rows = []
    for o in history:
        call = _Entry(o.id, True)
        rows.append((o.call, 0, o.id, call))
        if o.ret is not None:
            ret = _Entry(o.id, False)
            call.match = ret
            rows.append((o.ret, 1, o.id, ret))
    rows.sort(key=lambda r: r[:3])
    head = _Entry(-1, False)
    prev = head
    for *_, e in rows:
        prev.next, e.prev = e, prev
        prev = e
    return head


def _lift(e: _Entry) -> None:
    e.prev.next = e.next
    if e.next is not None:
        e.next.prev = e.prev
    m = e.match
    if m is not None:
        m.prev.next = m.next
        if m.next is not None:
            m.next.prev = m.prev


def _unlift(e: _Entry) -> None:
    m = e.match
    if m is not None:
        m.prev.next = m
        if m.next is not None:
            m.next.prev = m
    e.prev.next = e
    if e.next is not None:
        e.next.prev = e


def _search(history: History, model: Model, goal: Callable[[frozenset], bool], max_steps: int | None,
            timeout: float | None) -> tuple[str, tuple[int, ...], frozenset | None, tuple[int, ...], int | None,
                                            int, list]:
    """The Wing & Gong / Lowe search. Returns (outcome, witness or longest prefix, final states,
    longest prefix, stuck operation, steps, final states of complete linearizations seen)."""
    ops = list(history)
    need = sum(1 for o in ops if not o.pending)
    head = _entry_list(history)
    # the sequential start (a load phase before the threads): linearized in its only order, once
    fixed, state = _sequential_start(head, ops, model)
    bits = 0
    for i in fixed:
        bits |= 1 << i
    done = len(fixed)
    stack: list[tuple[_Entry, frozenset]] = []
    cache: dict[int, set[frozenset]] = {}
    longest: tuple[int, ...] = fixed
    stuck: int | None = None
    finals: list = []
    deadline = time.monotonic() + timeout if timeout is not None else None
    steps = 0
    entry = head.next
    while True:
        if done == need:
            if goal(state):
                return OK, fixed + tuple(e.id for e, _ in stack), state, longest, None, steps, finals
            if len(finals) < 8:
                finals.extend(s for s in state if s not in finals)
        steps += 1
        if (max_steps is not None and steps > max_steps) or (
                deadline is not None and steps % 512 == 0 and time.monotonic() > deadline):
            return UNKNOWN, (), None, longest, None, steps - 1, finals
        backtrack = False
        if entry is None:
            backtrack = True
        elif entry.is_call:
            o = ops[entry.id]
            new = set()
            for s in state:
                for out, nxt in model.step(s, o.op):
                    if o.pending or out == o.output:
                        new.add(nxt)
            if new:
                nbits = bits | (1 << entry.id)
                fs = frozenset(new)
                seen = cache.setdefault(nbits, set())
                if fs not in seen:
                    seen.add(fs)
                    stack.append((entry, state))
                    state, bits = fs, nbits
                    done += 0 if o.pending else 1
                    _lift(entry)
                    entry = head.next
                    continue
            entry = entry.next
        else:
            # the return of an operation not linearized yet: it cannot be placed after the prefix
            if len(fixed) + len(stack) >= len(longest):
                longest, stuck = fixed + tuple(e.id for e, _ in stack), entry.id
            backtrack = True
        if backtrack:
            if not stack:
                return ILLEGAL, longest, None, longest, stuck, steps, finals
            top, state = stack.pop()
            bits &= ~(1 << top.id)
            done -= 0 if ops[top.id].pending else 1
            _unlift(top)
            entry = top.next


# the model states after a sequential start, by (model, its operations and outputs): every crash
# state of a threaded history shares its load phase
_STARTS: dict[tuple, frozenset] = {}
_STARTS_MAX = 64


def _sequential_start(head: _Entry, ops: list, model: Model) -> tuple[tuple[int, ...], frozenset]:
    """The operations at the head of the entry list after HEAD that returned before the next one
    was called (a load phase run by one thread before the others start), lifted out of the list,
    and the model states after them. Real-time order leaves them one order only, so the search
    never needs to place them again; an operation whose output no state gives ends the start
    (the search then reports it as it would). Only the pure prefix counts: an operation whose
    return ties with another's call overlaps it."""
    run: list[_Entry] = []
    e = head.next
    while (e is not None and e.is_call and e.match is not None and e.next is e.match
           and (e.match.next is None or e.match.next.is_call)):
        run.append(e)
        e = e.match.next
    init = frozenset([model.init()])
    if len(run) < 2:
        return (), init
    key = (model.name, tuple((ops[x.id].op, ops[x.id].output) for x in run))
    got = _STARTS.get(key)
    if got is None:
        states, n = init, 0
        for x in run:
            o = ops[x.id]
            new = frozenset(nxt for st in states for out, nxt in model.step(st, o.op) if out == o.output)
            if not new:
                break
            states, n = new, n + 1
        got = (n, states)
        if len(_STARTS) >= _STARTS_MAX:
            _STARTS.clear()
        _STARTS[key] = got
    n, states = got
    if n < 2:
        return (), init
    for x in run[:n]:
        _lift(x)
    return tuple(x.id for x in run[:n]), states


def _op_line(history: History, model: Model, i: int) -> str:
    o = history[i]
    out = "in flight" if o.pending else f"-> {model.output_text(o.output)}"
    return f"#{i} (thread {o.thread}) `{model.op_text(o.op)}` {out}"


def check(history: History, model: Model, *, max_steps: int | None = DEFAULT_STEPS,
          timeout: float | None = None) -> Result:
    """Is HISTORY linearizable for MODEL? Pending operations may take effect or not. The search
    stops with UNKNOWN after MAX_STEPS steps or TIMEOUT seconds (None: no limit)."""
    history.validate()
    outcome, order, final, longest, stuck, steps, _ = _search(history, model, lambda s: True,
                                                              max_steps, timeout)
    if outcome == OK:
        return Result(OK, witness=order, steps=steps, reason="linearizable",
                      states=tuple(final) if final is not None else ())
    if outcome == UNKNOWN:
        return Result(UNKNOWN, longest=longest, steps=steps,
                      reason=f"search budget ran out after {steps} steps: not checked")
    prefix = ", ".join(f"#{i}" for i in longest) or "nothing"
    return Result(ILLEGAL, longest=longest, stuck=stuck, steps=steps,
                  reason=f"{_op_line(history, model, stuck)} cannot be linearized after the longest "
                         f"linearizable prefix ({prefix})")


def check_durable(history: History, model: Model, recovered: Any, *,
                  max_steps: int | None = DEFAULT_STEPS, timeout: float | None = None) -> Result:
    """After a crash: is RECOVERED (a model state, e.g. Model.dump_state of the dump) the state
    after some linearization of every completed operation of HISTORY plus any subset of its
    in-flight ones (at most one per thread), consistent with real-time order?

    OK: the witness lists the operations applied, in order (the in-flight ones it includes took
    effect). ILLEGAL: either the history before the crash is already not linearizable (the
    reason says so, with the stuck operation), or no such linearization ends in RECOVERED (the
    result's `states` holds some states that complete linearizations do end in). UNKNOWN: a
    budget ran out (the two searches share it)."""
    history.validate()
    seen_threads: set[int] = set()
    for o in history.pending():
        if o.thread in seen_threads:
            raise ValueError(f"thread {o.thread} has two operations in flight")
        seen_threads.add(o.thread)
    t0 = time.monotonic()
    plain = check(history, model, max_steps=max_steps, timeout=timeout)
    if plain.unknown:
        return plain
    if plain.illegal:
        return Result(ILLEGAL, longest=plain.longest, stuck=plain.stuck, steps=plain.steps,
                      reason="before the crash the history is already not linearizable: " + plain.reason)
    left = None if max_steps is None else max(max_steps - plain.steps, 0)

    def goal(states: frozenset) -> bool:
        return model.member(recovered, states) is not None

    outcome, order, final, longest, _, steps, finals = _search(
        history, model, goal, left, None if timeout is None else max(timeout - (time.monotonic() - t0), 0.0))
    steps += plain.steps
    if outcome == OK:
        applied = [i for i in order if history[i].pending]
        tail = f" (in flight and applied: {', '.join(f'#{i}' for i in applied)})" if applied else ""
        return Result(OK, witness=order, steps=steps, states=(recovered,),
                      reason=f"recovered state {model.describe(recovered)} follows linearization "
                             f"{', '.join(f'#{i}' for i in order) or '(empty)'}{tail}")
    if outcome == UNKNOWN:
        return Result(UNKNOWN, longest=longest, steps=steps,
                      reason=f"search budget ran out after {steps} steps: not checked")
    shown = ", ".join(model.describe(s) for s in finals[:3])
    return Result(ILLEGAL, steps=steps, states=tuple(finals), longest=plain.witness,
                  reason=f"no linearization of the completed operations plus in-flight ones ends in the "
                         f"recovered state {model.describe(recovered)}; they end in e.g. {shown}")


__all__ = ["CLASS", "ILLEGAL", "OK", "Result", "UNKNOWN", "check", "check_durable"]
