"""specs: reference models as data, histories, crash acceptance rules, leak and invariant policies.

Module map (each file's top note says what it owns; docs/models.md says how to add a model):
  model.py             the Model record (init, step, equal, describe, notation, dump, classes,
                       follow-up, strategy hook) and helpers over any model
  registry.py          the registry: get(name) -> Model ("ordered_map", "range_lock", ...)
  ordered_map.py       the ordered-map model (and its legacy function API used by harness)
  range_lock.py        the range-lock model (trylock / release over uint64 ranges)
  history.py           History / Operation: thread, call, return, output per operation
  oracle.py            the one-thread crash acceptance rule over any Model, verdict classes
  linearizability.py   linearizability and durable linearizability (ok / illegal / unknown)
  leaks.py             the leak rule
specs never runs a structure, and imports nothing from harness or crashsim at import time
(except leaks.py, which reads traces).
"""
