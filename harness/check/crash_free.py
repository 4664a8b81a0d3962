"""What a history's crash-free run already shows, before any crash.

Owns the judgement of the traced run's own output: every result the driver printed must be one
the structure's model allows (a nondeterministic model may allow several), and the structure's
own check after every operation must pass. Recovery may repair such damage, so no crash state
would show it: it is a finding of its own, with no crash point.
"""
from __future__ import annotations

from crashcheck.harness.check.findings import Finding, address_free
from crashcheck.specs.model import Model, answer_shape, op_kind, prefix_states, replay


def crash_free_findings(model: Model, ops: list, lines: list[str]) -> list[Finding]:
    """Findings of the crash-free run whose result lines (results and `!` lines) are LINES."""
    results = [line for line in lines if not line.startswith("!")]
    broken = [line.split(" ", 2) for line in lines if line.startswith("!invariant ")]
    texts = [b[2] for b in broken if len(b) == 3]
    bad = replay(model, ops, results, [model.init()])
    if bad is not None or len(results) < len(ops):
        if bad is not None:
            i, _, allowed = bad
            got = results[i]
        else:
            i, got = len(results), "nothing"
            before = prefix_states(model, ops[:i], [model.parse_output(r) for r in results])[-1]
            allowed = list(dict.fromkeys(o for st in before for o, _ in model.step(st, ops[i])))
        f = Finding("wrong-value", f"without any crash, `{model.op_text(ops[i])}` returned `{got}`, "
                    f"the model {allowed_text(model, allowed)}", ("no-crash", answer_shape(model, ops[i], got, allowed)))
        f.symptoms = rule_symptoms(texts, op=broke_in(model, ops, broken))
        f.free_rules = tuple(dict.fromkeys(address_free(t) for t in texts))
        return [f]
    if len(results) > len(ops):
        return [Finding("wrong-value", f"without any crash, the driver printed {len(results)} results "
                        f"for {len(ops)} operations", ("no-crash", "end"))]
    if broken:
        i = int(broken[0][1])
        more = f" (and {len(texts) - 1} more)" if len(texts) > 1 else ""
        where = f"`{model.op_text(ops[i])}` (operation {i})" if 0 <= i < len(ops) else f"operation {i}"
        op = broke_in(model, ops, broken)
        first = op_rule(op, texts[0] if texts else "")
        f = Finding("invariant-violation", f"without any crash, after {where}: "
                    f"{texts[0] if texts else '?'}{more}", ("no-crash-invariant", first))
        f.symptoms = rule_symptoms(texts[1:], skip=first, op=op)
        f.free_rules = tuple(dict.fromkeys(address_free(t) for t in texts))
        return [f]
    return []


def broke_in(model: Model, ops: list, broken: list[list[str]]) -> str:
    """The kind of the operation after which the crash-free run's first rule broke (BROKEN: its
    `!invariant I TEXT` lines, split), or '' when none did or its index is not an operation's."""
    i = int(broken[0][1]) if broken and broken[0][1].lstrip("-").isdigit() else -1
    return op_kind(model, ops[i]) if 0 <= i < len(ops) else ""


def op_rule(op: str, text: str) -> str:
    """A rule broken without any crash as the group that makes it one bug: the operation it broke
    in and the rule (the site of its check when the check gave one, CC_VIOLATION, else its text
    without numbers). One check broken by inserts and by deletes is two mistakes (issue 48: a
    hash index's garbage keys from insert, update and resizing were one record); one check of
    one operation is one, whatever its text says."""
    rule = address_free(text)
    return f"{op}: {rule}" if op else rule


def first_failing_op(model: Model, ops: list, lines: list[str]) -> int | None:
    """The first operation of a run without crash (result LINES) after which a rule broke, else the
    first that answered what the model does not allow, or None: where its failure began."""
    results = [line for line in lines if not line.startswith("!")]
    broke = [int(x.split(" ", 2)[1]) for x in lines if x.startswith("!invariant ") and x.split(" ", 2)[1].isdigit()]
    bad = replay(model, ops, results, [model.init()])
    found = broke[:1] + ([bad[0]] if bad is not None else [])
    return min(found) if found else None


def rule_symptoms(texts: list[str], skip: str | None = None, op: str = "") -> list[Finding]:
    """The rules the crash-free run broke, one finding per rule (op_rule: the operation OP they
    broke in and the rule's site or text), except SKIP: what one run shows is one bug (a wrong
    value and the rules broken on the way to it), as what one crash state shows is."""
    out: dict[str, Finding] = {}
    for text in texts:
        rule = op_rule(op, text)
        if rule != skip and rule not in out:
            out[rule] = Finding("invariant-violation", f"without any crash: {text}",
                                ("no-crash-invariant", rule))
    return list(out.values())


def allowed_text(model: Model, allowed: list) -> str:
    """The outputs the model allows, for a wrong value's detail: "`ok` or `exists`", or "nothing"."""
    return " or ".join(f"`{model.output_text(o)}`" for o in allowed) or "nothing"


__all__ = ["allowed_text", "broke_in", "crash_free_findings", "first_failing_op", "op_rule", "rule_symptoms"]
