"""Which seeded bug a bug record is: records matched against the catalog's signatures.

Owns the texts a record names its bug by (its `group`, the `file:line` of its lost stores and of
its leaked objects' allocations; a symptom's group and lost stores) and the verdict per seeded bug
of a many-bug variant: a record of its own, a symptom of another bug's record, or missed
(docs/trees.md "Bug catalog", "Many bugs at once"). The gate of many-bug variants
(tests/quality/test_many.py), bench/detection/run --many and scripts/seeded-signatures use it;
no run does: a signature is knowledge about the catalog, never an input of the fuzzer.
"""
from __future__ import annotations

from dataclasses import dataclass

OWN, SYMPTOM, MISSED = "own", "symptom", "missed"


def site_text(site: dict | None) -> str | None:
    """A record's site object as `file:line`, or None."""
    if not site or not site.get("file"):
        return None
    return f"{site['file']}:{site['line']}"


def own_texts(record: dict) -> list[str]:
    """What RECORD names its bug by: its group, its lost stores' sites, its leaks' allocation sites."""
    texts = [record.get("group") or ""] + list(record.get("sites") or [])
    texts += [site_text(leak.get("site")) for leak in record.get("leaks") or []]
    return [t for t in dict.fromkeys(texts) if t]


def cause_texts(record: dict) -> list[str]:
    """The stores that matter in RECORD's own crash state (its `cause`: lost, and persisted but
    needed), for a record whose own finding loses nothing: a state that needs a store persisted
    before another was made (an update's new copy live before the old one is cleared) names its
    bug by that store."""
    return [] if record.get("sites") else [t for t in record.get("cause") or [] if isinstance(t, str)]


def symptom_texts(record: dict) -> list[str]:
    """What RECORD's symptoms name: each one's group and lost stores' sites."""
    texts = []
    for s in record.get("symptoms") or []:
        texts.append(s.get("group") or "")
        # a symptom's lost stores are `file:line` texts (a record's `orders`)
        texts += [p if isinstance(p, str) else site_text(p.get("site")) for p in s.get("lost") or []]
    return [t for t in dict.fromkeys(texts) if t]


def matches(texts: list[str], signature) -> bool:
    """One of TEXTS is one of SIGNATURE's (a file named from another folder ends with it)."""
    return any(t == s or t.endswith("/" + s) for t in texts for s in signature)


@dataclass(frozen=True)
class Verdict:
    bug: str
    how: str                  # OWN, SYMPTOM or MISSED
    record: str | None        # the id of the record it is (OWN) or is a symptom of (SYMPTOM)
    first_seen_s: float | None = None   # the record's first_seen_s (OWN)


def classify(records: list[dict], bugs) -> dict[str, Verdict]:
    """Per seeded bug of BUGS (structures.SeededBug, each with a signature), what the unexpected
    RECORDS of one run of their many-bug variant made of it. A record is a bug's own when its
    group matches that bug's signature and no other's, or else when its lost stores and leaks
    match that bug's and no other's, or else (its own state loses nothing) when the stores that
    matter in its state do; the first such record (in the results' order) counts. A bug
    with no record of its own is a symptom when a record's symptoms (or its own texts, matching
    several bugs) name it, and missed otherwise."""
    unexpected = [r for r in records if not r.get("expected")]
    out: dict[str, Verdict] = {}
    for r in unexpected:
        named = [b for b in bugs if matches([r.get("group") or ""], b.signature)] \
            or [b for b in bugs if matches(own_texts(r), b.signature)] \
            or [b for b in bugs if matches(cause_texts(r), b.signature)]
        if len(named) == 1 and named[0].name not in out:
            out[named[0].name] = Verdict(named[0].name, OWN, r.get("id"), r.get("first_seen_s"))
    for b in bugs:
        if b.name in out:
            continue
        host = next((r for r in unexpected
                     if matches(symptom_texts(r) + own_texts(r), b.signature)), None)
        out[b.name] = Verdict(b.name, SYMPTOM, host.get("id")) if host else Verdict(b.name, MISSED, None)
    return {b.name: out[b.name] for b in bugs}


__all__ = ["MISSED", "OWN", "SYMPTOM", "Verdict", "cause_texts", "classify", "matches", "own_texts", "site_text",
           "symptom_texts"]
