"""The Model interface: a reference model as data (porcupine's idea), plus helpers over any model.

Owns what a model is and the generic operations every checker uses: running operations through a
model (`run`, `prefix_states`), the set of states a possibly nondeterministic model may be in, and
the fallback classification of a dump that matches no acceptable state. Never knows about one
particular structure: the ordered map lives in specs/ordered_map.py, the range lock in
specs/range_lock.py, the registry in specs/registry.py.

A model is a frozen record of pure functions over immutable, hashable states:

    init()                  -> the initial state
    step(state, op)         -> [(output, next_state), ...]   every legal outcome of OP in STATE;
                               one for a deterministic model, several for a nondeterministic one,
                               never empty (an op that cannot happen is a model error)
    equal(a, b)             -> are two states the same (default ==; may be coarser than ==, never
                               finer: checkers memoise on ==, which is then only less pruning)
    describe(state)         -> one short line for people
    parse_op / op_text      -> the driver's text notation of an operation, both ways
    parse_output / output_text -> the same for outputs (parse_output normalises a driver line)
    dump_state(dump)        -> the state a post-crash dump (the driver's check JSON "dump") shows
    parse_dump(text)        -> optional: the state a crash-free run's final `dump` line shows when
                               the driver prints it in the history's notation (a map: `K V K V`);
                               without it that line is JSON, read by dump_state
    state_json(state)       -> the state in the JSON form of bug records (`expected_states`)
    classify(mismatch)      -> (class, one-line detail) of a dump equal to no acceptable state
    classes                 -> every class `classify` may return
    followup(ops, **opts)   -> the short workload the driver runs after recovery
    continuation(ops, done, inflight, **opts) -> optional: the workload run after recovering a
                               crash with DONE operations completed and INFLIGHT in flight, aimed
                               at that crash (specs/ordered_map.py); without it, followup
    answers(state, ops)     -> optional, deterministic models only: the outputs of OPS run from
                               STATE, as stepping through them gives, but faster (the oracle
                               replays each follow-up from each recovered state with it)
    histories(**opts)       -> a Hypothesis strategy of operation lists (or None if the model has
                               none); the driver runs them, so they must use the text notation
    thread_histories(threads, **opts) -> optional: a Hypothesis strategy of (load, sections), a
                               load phase and one operation list per thread, for a model whose
                               threads must each follow a protocol (a range-lock thread releases
                               what it holds); without it the harness deals one drawn history's
                               operations out to the threads at random (harness/check/threads.py)
    contend(draw, ops, start, kinds) -> optional: OPS with the operations from START on (those the
                               harness deals out to threads) re-aimed at a few things every thread
                               shares (a map's few hot keys, present when the threads start), drawing
                               with Hypothesis's DRAW; KINDS: the operation kinds the structure has
                               (its adapter's), which it may add; the harness uses it for half its
                               dealt histories
    shape(op)               -> accepted for models of 2026-11-27, no longer used (answer_shape)
    validate(op, limits)    -> why a structure with LIMITS (its `driver info`: key_kind,
                               value_size, value_min, ...) cannot run OP, or None (replay checks a
                               record's operations with it before running them)

Invariant: step never mutates its arguments; states are values (tuples, frozensets, ints).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable, Iterable, Sequence

State = Hashable
Op = Any
Output = Any


@dataclass(frozen=True)
class Mismatch:
    """What a classifier sees: the history OPS, STATES[i] = the states possible after ops 0..i-1
    (a list per prefix: one state for a deterministic model), the crash point (DONE completed,
    INFLIGHT the index of the op in flight or None), the acceptable states and the dump's state."""
    model: "Model"
    ops: Sequence[Op]
    states: Sequence[Sequence[State]]
    done: int
    inflight: int | None
    expected: Sequence[State]
    actual: State


def generic_classify(m: Mismatch) -> tuple[str, str]:
    """Fallback for models without their own classes: every wrong state is a `wrong-value`."""
    shown = ", ".join(m.model.describe(s) for s in m.expected[:3])
    more = f" (+{len(m.expected) - 3} more)" if len(m.expected) > 3 else ""
    return ("wrong-value", f"recovered state {m.model.describe(m.actual)} is none of the acceptable "
            f"states {shown}{more}")


def _no_followup(ops: Sequence[Op], **opts: Any) -> list[Op]:
    return []


def _no_dump(dump: Any) -> State:
    raise NotImplementedError("this model does not read post-crash dumps")


def _any_op(op: Op, limits: dict[str, Any]) -> str | None:
    return None


def _normalise(line: str) -> str:
    return " ".join(str(line).split())


@dataclass(frozen=True)
class Model:
    """A reference model: see the module note for what each function must do."""
    name: str
    init: Callable[[], State]
    step: Callable[[State, Op], list[tuple[Output, State]]]
    parse_op: Callable[[str], Op]
    op_text: Callable[[Op], str]
    equal: Callable[[State, State], bool] = operator.eq
    describe: Callable[[State], str] = repr
    parse_output: Callable[[str], Output] = _normalise
    output_text: Callable[[Output], str] = str
    dump_state: Callable[[Any], State] = _no_dump
    parse_dump: Callable[[str], State] | None = None
    state_json: Callable[[State], Any] = repr
    classify: Callable[[Mismatch], tuple[str, str]] = generic_classify
    classes: tuple[str, ...] = ("wrong-value",)
    followup: Callable[..., list[Op]] = _no_followup
    # continuation(ops, done, inflight, **opts) -> what runs after the recovery of a crash with DONE
    # operations completed and INFLIGHT in flight (None: none), aimed at that crash; a model
    # without one runs its followup after every crash of a history
    continuation: Callable[..., list[Op]] | None = None
    # answers(state, ops) -> the outputs of OPS run from STATE, for a deterministic model: the
    # same as stepping through them, faster (the oracle replays every follow-up with it)
    answers: Callable[[State, Sequence[Op]], list[Output]] | None = None
    histories: Callable[..., Any] | None = None
    thread_histories: Callable[..., Any] | None = None
    contend: Callable[..., Any] | None = None
    validate: Callable[[Op, dict[str, Any]], str | None] = _any_op
    # accepted and unused: models written for 2026-11-27's crashcheck passed shape(op) to group
    # wrong answers by where the operation sits; they now group by the check that failed
    # (answer_shape), and such a model must keep loading (docs/models.md)
    shape: Callable[[Op], str] | None = field(default=None, compare=False)
    doc: str = field(default="", compare=False)

    # -- helpers over the functions above (not part of what a model author writes) ----------

    def __reduce__(self):
        """Pickled by registry name (its functions may be lambdas): executors send models to
        worker processes, which look them up again. An unregistered model cannot be pickled."""
        from crashcheck.specs import registry
        if self.name not in registry.names() or registry.get(self.name) is not self:
            raise TypeError(f"model {self.name!r} is not registered in crashcheck.specs.registry, so it cannot be pickled")
        return (registry.get, (self.name,))


    def outcomes(self, state: State, op: Op, output: Output | None = None) -> list[tuple[Output, State]]:
        """step(state, op), keeping only outcomes whose output equals OUTPUT (all if None)."""
        outs = self.step(state, op)
        if output is None:
            return list(outs)
        return [(o, s) for o, s in outs if o == output]

    def member(self, state: State, states: Iterable[State]) -> State | None:
        """The first of STATES equal to STATE (by `equal`), or None."""
        for s in states:
            if self.equal(s, state):
                return s
        return None

    def dedup(self, states: Iterable[State]) -> list[State]:
        """STATES without repeats (by `equal`), in order."""
        out: list[State] = []
        for s in states:
            if self.member(s, out) is None:
                out.append(s)
        return out


class Workload(list):
    """A list of operations whose first `load` operations are a load phase: set-up that is run
    (and traced) but not crash-checked (a map's bulk inserts before the checked operations)."""
    load: int = 0
    # whether the traced run traces the load too: never, since the trace starts at the first
    # checked operation (harness/check/traced_run.py); a bug record made before that (no
    # `load_traced` field) numbers its crash points in a trace that holds the load, and its
    # replay sets this to trace it again
    load_traced: bool = False

    # Operations a repr shows. Hypothesis prints the repr of every failing example it replays at
    # the end of a batch, and warns ("Generating overly large repr") past 30 kB: a history with a
    # bulk load is hundreds of operations. Its full text is in the bug record, never in a repr.
    REPR_OPS = 3

    def __repr__(self) -> str:
        shown = ", ".join(repr(op) for op in self[:self.REPR_OPS])
        more = f", ... ({len(self) - self.REPR_OPS} more)" if len(self) > self.REPR_OPS else ""
        return f"{type(self).__name__}([{shown}{more}], load={self.load}, ops={len(self)})"

    def _repr_pretty_(self, printer, cycle: bool) -> None:
        """The same short text for Hypothesis's pretty printer (it would list a list's items)."""
        printer.text(repr(self))


def with_load(ops: Iterable[Op], load: int) -> Workload:
    """OPS as a Workload whose first LOAD operations are its load phase."""
    w = Workload(ops)
    w.load = load
    return w


def run(model: Model, ops: Iterable[Op], state: State | None = None) -> tuple[State, list[Output]]:
    """Apply every op, taking the first outcome of each (exact for a deterministic model)."""
    state = model.init() if state is None else state
    results = []
    for op in ops:
        out, state = model.step(state, op)[0]
        results.append(out)
    return state, results


def advance(model: Model, states: Sequence[State], op: Op, output: Output | None = None) -> list[State]:
    """The states possible after OP from any of STATES (keeping outcomes whose output is OUTPUT,
    unless None): the powerset view of a nondeterministic model."""
    return model.dedup(s for st in states for _, s in model.outcomes(st, op, output))


def prefix_states(model: Model, ops: Sequence[Op], outputs: Sequence[Output | None] | None = None
                  ) -> list[list[State]]:
    """out[i] = the states possible after ops 0..i-1 (len = len(ops) + 1). With the recorded
    OUTPUTS (an entry may be None: not known), a state is kept only if some path through it
    explains every recorded output, earlier and later ones (a nondeterministic model's branch is
    fixed by what the run returned afterwards too). All sets empty: the outputs are impossible."""
    cur = [model.init()]
    out = [cur]
    for i, op in enumerate(ops):
        want = outputs[i] if outputs is not None and i < len(outputs) else None
        cur = advance(model, cur, op, want)
        out.append(cur)
    if outputs is None:
        return out
    # backward pass: drop states from which the recorded outputs cannot be continued
    for i in range(len(ops) - 1, -1, -1):
        want = outputs[i] if i < len(outputs) else None
        out[i] = [s for s in out[i]
                  if any(model.member(nxt, out[i + 1]) is not None for _, nxt in model.outcomes(s, ops[i], want))]
    return out


def op_kind(model: Model, op: Op) -> str:
    """The kind of an operation (its first word in the model's notation)."""
    return getattr(op, "kind", None) or (model.op_text(op).split() or ["?"])[0]


def answer_shape(model: Model, op: Op, got: str, allowed: Sequence[Output]) -> str:
    """What makes wrong answers of runs without crash one bug: the check that failed, the
    model's answer to the kind of operation that answered wrong, told by what it answered and what
    the model allows (the first word of each: `trylock: ok for fail`, `lookup: notfound for
    value`). Not where the operation's key or range sits (at 0, at the maximum): that is text of
    the message, and one mistake shows at every place (issue 48: the range lock's missed overlap
    answered wrongly for ranges in the middle and to the maximum, six records for two bugs). A
    trylock that wrongly succeeds and one that wrongly fails stay two bugs."""
    def kind(text: str) -> str:
        return (str(text).split() or ["nothing"])[0]
    want = "/".join(dict.fromkeys(kind(model.output_text(o)) for o in allowed)) or "nothing"
    return f"{op_kind(model, op)}: {kind(got)} for {want}"


def replay(model: Model, ops: Sequence[Op], got: Sequence[str], start: Sequence[State]
           ) -> tuple[int, list[State], list[Output]] | None:
    """Run OPS from the states START, requiring the driver outputs GOT (text lines). None if every
    output is possible; else (index of the first impossible one, the states before it, the outputs
    the model allows there)."""
    return replay_outputs(model, ops, [model.parse_output(x) for x in got], start)


def replay_outputs(model: Model, ops: Sequence[Op], outputs: Sequence[Output], start: Sequence[State]
                   ) -> tuple[int, list[State], list[Output]] | None:
    """replay() with outputs already parsed (a History's)."""
    cur = list(start)
    for i, op in enumerate(ops):
        if i >= len(outputs):
            break
        want = outputs[i]
        if len(cur) == 1:               # the common, deterministic case, without set building
            nxt = [s for o, s in model.step(cur[0], op) if o == want]
            if len(nxt) > 1:
                nxt = model.dedup(nxt)
        else:
            nxt = advance(model, cur, op, want)
        if not nxt:
            allowed = []
            for st in cur:
                for o, _ in model.step(st, op):
                    if o not in allowed:
                        allowed.append(o)
            return i, cur, allowed
        cur = nxt
    return None


__all__ = ["answer_shape", "op_kind", "Mismatch", "Model", "Workload", "advance", "generic_classify", "prefix_states", "replay",
           "replay_outputs", "run", "with_load"]
