"""The one form in which anything of ours crosses a Dask cluster: pickled bytes.

Owns `pack` and `unpack`, which the Dask executor (harness/run/dask_executor.py) applies to everything
it sends or hears: the units it submits, the TargetResults they return, their progress reports,
heartbeats and errors on the run's event topic.

Why: Dask sends its own messages (log_event, scheduler events, task-finished reports) with
msgpack, which holds integers only up to 2^64. A legal-state count passes that on any history
that bulk-loads a structure (WOART's reach about 10^80; a crash point with a thousand pending
pieces has about 10^301), and one integer too large made the worker drop the whole batch of
messages it was in, its task-finished report included, so the client waited forever. Bytes are
one msgpack `bin` whatever they hold, so no field, of today or added later, can overflow. Pickle
keeps every Python type exactly (integers of any size, tuples, dataclasses), and the client
already unpickles what its workers return: this trusts them no more than Dask does.
"""
from __future__ import annotations

import pickle


def pack(obj) -> bytes:
    """OBJ as bytes that any Dask message can carry."""
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


def unpack(data: bytes):
    """What pack() was given."""
    return pickle.loads(data)


__all__ = ["pack", "unpack"]
