"""Concurrent histories: what each thread called, when, and what it got back.

Owns the History type the linearizability checkers read (specs/linearizability.py) and its
well-formedness rules. An operation has a thread, a call and a return position in one total order
of events (any increasing numbers: event indexes or timestamps), and the output it returned; an
operation that never returned (in flight at a crash, or still running) has ret None and output
None. Real-time order: A precedes B iff A returned before B was called (A.ret < B.call).

Rules (History.validate): call < ret; within a thread, operations do not overlap (each is called
after the previous one returned); at most one operation per thread never returned, and it is that
thread's last. Positions need not be distinct across threads only if calls and returns never tie
(a tie between A.ret and B.call is read as "not before": the two overlap).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Sequence


@dataclass(frozen=True)
class Operation:
    """One operation of a history. ID is its index in the History."""
    id: int
    thread: int
    op: Any
    call: float
    ret: float | None = None
    output: Any = None

    @property
    def pending(self) -> bool:
        """It never returned (in flight at the crash)."""
        return self.ret is None

    def precedes(self, other: "Operation") -> bool:
        """Real-time order: this returned before OTHER was called."""
        return self.ret is not None and self.ret < other.call


class History(Sequence[Operation]):
    """An immutable list of operations (ids 0..n-1 in list order), any number of threads."""

    def __init__(self, ops: Iterable[Operation] = ()) -> None:
        self._ops = tuple(ops)
        for i, o in enumerate(self._ops):
            if o.id != i:
                raise ValueError(f"operation {i} has id {o.id}: ids must be 0..n-1 in order")

    # -- building ----------------------------------------------------------------------------

    @classmethod
    def build(cls, rows: Iterable[tuple]) -> "History":
        """From rows (thread, op, call, ret, output); ret and output may be None (pending)."""
        return cls(Operation(i, *row) for i, row in enumerate(rows))

    @classmethod
    def sequential(cls, ops: Sequence[Any], outputs: Sequence[Any] | None = None, thread: int = 0,
                   inflight: Any = None) -> "History":
        """One thread running OPS one after the other (op i is called at 2i, returns at 2i+1), with
        OUTPUTS; INFLIGHT, if given, is one more op called and never returned (a crash in it)."""
        rows = [(thread, op, 2 * i, 2 * i + 1, outputs[i] if outputs is not None else None)
                for i, op in enumerate(ops)]
        if inflight is not None:
            rows.append((thread, inflight, 2 * len(ops), None, None))
        return cls.build(rows)

    @classmethod
    def from_events(cls, events: Iterable[tuple]) -> "History":
        """From a log in time order: ("call", thread, op) and ("return", thread, output); a
        thread's return closes its open call. Calls never returned stay pending."""
        rows: list[list] = []
        open_by_thread: dict[int, int] = {}
        for pos, ev in enumerate(events):
            kind, thread, arg = ev
            if kind == "call":
                if thread in open_by_thread:
                    raise ValueError(f"event {pos}: thread {thread} calls while its previous op is open")
                open_by_thread[thread] = len(rows)
                rows.append([thread, arg, pos, None, None])
            elif kind == "return":
                if thread not in open_by_thread:
                    raise ValueError(f"event {pos}: thread {thread} returns with no open call")
                row = rows[open_by_thread.pop(thread)]
                row[3], row[4] = pos, arg
            else:
                raise ValueError(f"event {pos}: kind {kind!r} is neither call nor return")
        return cls.build(tuple(r) for r in rows)

    # -- reading -----------------------------------------------------------------------------

    def __getitem__(self, i):  # type: ignore[override]
        return self._ops[i]

    def __len__(self) -> int:
        return len(self._ops)

    def __iter__(self) -> Iterator[Operation]:
        return iter(self._ops)

    def __repr__(self) -> str:
        return f"History({list(self._ops)!r})"

    def threads(self) -> list[int]:
        return sorted({o.thread for o in self._ops})

    def completed(self) -> list[Operation]:
        return [o for o in self._ops if not o.pending]

    def pending(self) -> list[Operation]:
        return [o for o in self._ops if o.pending]

    def one_at_a_time(self) -> list[Operation] | None:
        """The operations in call order if none overlaps another in real time and all returned (the
        run was sequential whatever its threads), else None."""
        order = sorted(self._ops, key=lambda o: o.call)
        if any(o.pending for o in order) or any(not a.precedes(b) for a, b in zip(order, order[1:])):
            return None
        return order

    def validate(self) -> "History":
        """Raise ValueError on a history breaking the module's rules; returns self."""
        last: dict[int, Operation] = {}
        for o in sorted(self._ops, key=lambda o: o.call):
            if o.ret is not None and not o.call < o.ret:
                raise ValueError(f"operation {o.id}: returns at {o.ret}, not after its call at {o.call}")
            prev = last.get(o.thread)
            if prev is not None:
                if prev.pending:
                    raise ValueError(f"thread {o.thread}: operation {o.id} is called after operation "
                                     f"{prev.id}, which never returned")
                if not prev.ret < o.call:
                    raise ValueError(f"thread {o.thread}: operations {prev.id} and {o.id} overlap")
            last[o.thread] = o
        return self

    def text(self, op_text=str, output_text=str) -> str:
        """One line per operation: `t<thread> [call, ret] op -> output` (for reports)."""
        lines = []
        for o in self._ops:
            ret = "..." if o.pending else f"{o.ret:g}"
            out = "(in flight)" if o.pending else output_text(o.output)
            lines.append(f"#{o.id} t{o.thread} [{o.call:g}, {ret}] {op_text(o.op)} -> {out}")
        return "\n".join(lines)


__all__ = ["History", "Operation"]
