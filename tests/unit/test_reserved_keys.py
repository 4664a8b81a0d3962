"""Reserved keys and distinct values (expect.json "reserved_keys", "distinct_values";
specs/map_histories.py respect): the histories a structure gets never use a key it cannot store,
and with distinct values never write one value twice; a bad declaration is one line. The
end-to-end case (a table whose empty slots hold key 0) is tests/e2e/test_reserved_keys.py."""
import json

import pytest
from hypothesis import given, settings, HealthCheck

from crashcheck.harness.core.errors import UsageError
from crashcheck.harness.target import structures
from crashcheck.specs.map_histories import histories, respect
from crashcheck.specs.ordered_map import parse_op

ZERO, TOP = (0).to_bytes(8, "big"), ((1 << 64) - 1).to_bytes(8, "big")


def test_respect_moves_a_reserved_key_to_one_free_key_and_keeps_the_shape():
    ops = [parse_op(t) for t in ("insert 0 5", "insert 1 6", "lookup 0", "delete 0", "scan 0 10",
                                 f"insert {2**64 - 1} 7")]
    out = respect(ops, frozenset({ZERO, TOP}))
    assert [op.text() for op in out] == ["insert 2 5", "insert 1 6", "lookup 2", "delete 2", "scan 0 10",
                                         f"insert {2**64 - 2} 7"]


def test_respect_makes_values_distinct():
    ops = [parse_op(t) for t in ("insert 1 5", "insert 2 5", "update 1 5", "update 2 6")]
    out = respect(ops, distinct_values=True)
    values = [op.value for op in out]
    assert len(set(values)) == 4 and values[0] == ops[0].value and values[3] == ops[3].value


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(histories(keys="dense", reserved_keys=(ZERO, TOP), distinct_values=True))
def test_generated_histories_respect_the_declaration(ops):
    assert all(op.key not in (ZERO, TOP) for op in ops if op.kind != "scan")
    written = [op.value for op in ops if op.kind in ("insert", "update")]
    assert len(written) == len(set(written))


def test_the_declaration_is_read_from_expect_json(tmp_path, monkeypatch):
    folder = tmp_path / "t"
    folder.mkdir()
    (folder / "expect.json").write_text(json.dumps({"reserved_keys": ["0", "x:ff"], "distinct_values": True}))
    bugs, known, model, thresholds, reserved, distinct = structures._catalog(folder)
    assert reserved == (ZERO, b"\xff") and distinct is True
    (folder / "expect.json").write_text(json.dumps({"reserved_keys": ["zero"]}))
    with pytest.raises(UsageError, match=r"expect.json: reserved_keys\[0\]: 'zero' is not a key"):
        structures._catalog(folder)


def test_threaded_histories_respect_the_declaration_too():
    # Contention re-aims the threads' operations at hot keys and inserts at their fresh
    # neighbours, after the history respected the declaration: a neighbour could be a reserved key
    # (pairkv's 0 next to a hot 1 answered `exists` and was reported as a wrong value).
    import dataclasses
    from hypothesis import find
    from hypothesis.errors import NoSuchExample
    from crashcheck.harness.run.config import Config
    from crashcheck.harness.run.strategies import for_target
    reserved = tuple(k.to_bytes(8, "big") for k in range(0, 64, 2))     # every even key below 64
    wort = dataclasses.replace(structures.get("wort"), reserved_keys=reserved, distinct_values=False)
    strategy = for_target(wort, Config(threads=3, keys="dense"))

    def uses_reserved(ops) -> bool:      # (a Threaded history is every thread's operations, flattened)
        return any(op.key in reserved for op in ops if op.kind != "scan")
    with pytest.raises(NoSuchExample):
        find(strategy, uses_reserved, settings=settings(max_examples=300, database=None,
                                                         suppress_health_check=list(HealthCheck)))
