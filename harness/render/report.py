"""HTML reports: render a results file (docs/bug-record.md) with the Jinja2 templates in reports/.

Owns turning bug records into what a person reads: the summary rows, the per-bug diff between the
closest acceptable state and the recovered dump, source excerpts, store tables and the timeline
picture, and a threaded bug's lanes. Reads nothing but the results it is given (records carry their own source excerpts), so a
report renders the same anywhere. Writes atomically.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from pathlib import Path

from markupsafe import Markup, escape

from crashcheck.harness.core.counts import big
from crashcheck.harness.triage.records import region_prefix
from crashcheck.harness.triage.pmdk_calls import stack_text
from crashcheck.harness.render.fix_view import fix_view
from crashcheck.harness.render.lanes_svg import render_lanes
from crashcheck.harness.render.perf_view import perf_view
from crashcheck.harness.core.paths import HEADERS
from crashcheck.harness.render.timeline import render_timeline

TEMPLATES = Path(__file__).resolve().parents[2] / "reports" / "templates"
# rows of a threaded bug's switch list; a random walk switches at most points, and the record
# keeps every switch
MAX_SWITCHES = 200


def site_text(site: dict | None) -> str:
    if not site:
        return "unknown site"
    text = f"{site.get('file') or '?'}:{site.get('line', 0)} in {site.get('func') or '?'}"
    at = site.get("inlined_at")
    if at:
        text += f" (inlined into {at.get('func') or '?'} at {at.get('file')}:{at.get('line')})"
    if site.get("via"):
        text += f" via {site['via'][0]}"
    return text


# Helpers in headers (persist.h's persistent() and cc_mfence, a tree's store8 wrapper): a store,
# flush or fence inside one is shown at the line of the structure's code that called it (the
# site's inlined-at line is the nearest caller in another file, docs/trace-format.md).


def _helper(site: dict) -> bool:
    """A header of helpers, not one `crashcheck build` named as the structure's own (a
    header-only structure's stores are named by its header's lines)."""
    return (site.get("file") or "").endswith(HEADERS) and not site.get("own")


def _source(bug: dict, site: dict | None) -> Markup:
    """A few lines of source around SITE, its own line highlighted (from the record's `sources`),
    and under them the function it was inlined into: a store of a static function inlined at -O2
    is shown at the store, not at the call. A site inside a helper in a header (a fence in
    persist.h's cc_mfence) shows the line of the structure's code that called the helper, which
    is the line a reader can act on."""
    if not site:
        return Markup("")
    at = site.get("inlined_at") or {}
    sources = bug.get("sources", {})
    caller = sources.get(f"{at.get('file')}:{at.get('line')}") if at.get("line") and _helper(site) else None
    src = caller or sources.get(f"{site.get('file')}:{site.get('line')}")
    if not src:
        return Markup(f'<p class="srcname">{escape(site_text(site))} (source not available)</p>')
    lines = "".join(
        f'<span class="{"hit" if n == src["line"] else ""}">{n:>5}  {escape(text)}</span>'
        for n, text in src["lines"])
    chain = ""
    if site.get("inline_chain") and caller is None:
        # every call the code was inlined at, up to the function it ended up in (trace version 4)
        chain = "".join(f'<div class="chain">&#8627; inlined at {escape(frame)}</div>'
                        for frame in site["inline_chain"])
    elif at.get("line") and caller is None:
        chain = (f'<div class="chain">&#8627; inlined into {escape(at.get("func") or "?")} at '
                 f'{escape(at.get("file") or "?")}:{at["line"]}</div>')
    # the library frames the store was named past (std::atomic's store in bits/atomic_base.h)
    chain += "".join(f'<div class="chain via">&#8627; via {escape(frame)}</div>'
                     for frame in site.get("via") or ())
    return Markup(f'<div class="srcname">{escape(_name(site, caller is not None))}</div>'
                  f'<pre class="src">{lines}</pre>{chain}')


def _name(site: dict, at_caller: bool) -> str:
    """The box's title: the site; a helper's site shown at its caller says so."""
    if not at_caller:
        where = f"{site.get('file') or '?'}:{site.get('line', 0)} in {site.get('func') or '?'}"
        return where
    return site_text(site)


def _stores(bug: dict, stores: list[dict], kind: str) -> Markup:
    rows = "".join(
        f'<tr class="{kind}"><td class="num">#{s["seq"]}</td><td class="mono">{region_prefix(s.get("region"))}+{s["off"]:#x}</td>'
        f'<td class="num">{_size_text(s)}</td><td class="mono">{escape(s.get("data", ""))}</td>'
        f'<td>{escape(site_text(s.get("site")))}{_call_cell(s)}</td></tr>' for s in stores)
    table = (f'<table><tr><th>event</th><th>offset</th><th>bytes</th><th>data</th><th>source</th></tr>'
             f'{rows}</table>')
    seen, excerpts = set(), []
    for s in stores:
        site = s.get("site")
        key = (site or {}).get("file"), (site or {}).get("line")
        if site and key not in seen and len(excerpts) < 3:
            seen.add(key)
            excerpts.append(_source(bug, site))
    return Markup(table + "".join(excerpts))


def _call_cell(s: dict) -> str:
    """A library store's calls, outermost first (the program's call, then the library's: its
    record's `call`, harness/triage/pmdk_calls.py), under its source; '' for the program's own."""
    if not s.get("call"):
        return ""
    return f'<br><span class="muted">called from: {escape(stack_text(s["call"]))}</span>'


def _size_text(s: dict) -> Markup:
    """A piece's size; a piece of a wider store (split at the failure-atomic unit) says so."""
    if s.get("store_size"):
        return Markup(f'{s["size"]} <span class="piece">(piece {s.get("part", 0) + 1} of a '
                      f'{s["store_size"]}-byte store)</span>')
    return Markup(str(s["size"]))


def _pairs(state) -> bool:
    return isinstance(state, list) and all(isinstance(p, list) and len(p) == 2 for p in state)


def _diff(expected: list[list[list[str]]], actual: list[list[str]] | None) -> list[dict]:
    """Rows of the closest expected state vs the recovered dump (driver notation pairs)."""
    if actual is None or not expected or not all(_pairs(x) for x in (actual, *expected)):
        return []         # a model whose states are not key/value pairs: shown as they are
    got = dict(map(tuple, actual))

    def distance(state):
        want = dict(map(tuple, state))
        return sum(1 for k in set(want) | set(got) if want.get(k) != got.get(k))
    want = dict(map(tuple, min(expected, key=distance)))
    rows = []
    for key in sorted(set(want) | set(got), key=lambda k: (len(k), k)):
        w, g = want.get(key), got.get(key)
        status = ("same" if w == g else "missing" if g is None else "extra" if w is None else "changed")
        rows.append({"key": key, "want": w if w is not None else "-", "got": g if g is not None else "-",
                     "status": status})
    # Differences first; unchanged keys after them, so a long dump does not hide the point.
    return sorted(rows, key=lambda r: r["status"] == "same")


def _crash_text(bug: dict) -> str:
    crash = bug["crash"]
    if bug.get("class") == "nondeterminism":
        return ("No crash: the same history, run twice, did not do the same (the detail says where "
                "the runs parted).")
    if bug.get("class") == "code-pointer-in-pm":
        return ("No crash needed: the run stored a code address into PM (below), which no later "
                "process can use; its crash states were not checked.")
    if crash.get("index") is None:
        return ("No crash needed: the run without any crash already fails (a result the model "
                "disagrees with, or the structure's own check right after an operation).")
    if bug.get("recovery_of"):
        text = (f"Power failed during recovery (trace event #{crash['event']} of the recovery run), "
                f"while it repaired the image left by an earlier crash")
        if crash.get("inflight") is not None:
            text += f" during operation {crash['inflight']}"
        return text + "; then recovery ran again. The lost stores below are recovery's own."
    what = {"fence": "just before a fence", "op_begin": "before an operation started",
            "op_end": "right after an operation returned", "end": "at the end of the run"}
    text = f"Power failed {what.get(crash.get('kind'), crash.get('kind', ''))} (trace event #{crash['event']})"
    if crash.get("inflight") is not None:
        text += f", during operation {crash['inflight']}"
    return text + "."


def prepare(results: dict) -> dict:
    """The template's context: derived rows, counts and per-bug views."""
    bugs = []
    by_class: dict[str, Counter] = {}
    for raw in results.get("bugs", []):
        bug = dict(raw)
        # fields of newer records (a journal or an older results file may lack them)
        for name, default in (("cause", []), ("symptoms", []), ("orders", []), ("assumptions", None),
                              ("code_pointers", []),
                              ("classes", []), ("without_crash", ""), ("shrink", None), ("fix", None),
                              ("folded_by_fix", 0)):
            bug.setdefault(name, default)
        bug["diff"] = _diff(bug.get("expected_states", []), bug.get("actual"))
        bug["diff_note"] = ""
        if bug["diff"] and all(d["status"] == "same" for d in bug["diff"]):
            # The contents are right: what failed is elsewhere (the structure's own check, a leak,
            # the follow-up). A table of "same" rows would read as "nothing wrong".
            bug["diff_note"] = (f"The recovered contents ({len(bug['diff'])} key{'s' if len(bug['diff']) != 1 else ''}) "
                                f"equal an acceptable state; the {bug['class']} is not in the contents "
                                f"but in: {bug.get('detail') or bug['class']}")
            bug["diff"] = []
        bug["crash_text"] = _crash_text(bug)
        timeline = bug.get("timeline") or []
        crash_index = next((i for i, ev in enumerate(timeline) if ev.get("kind") == "crash"), None)
        events = [ev for ev in timeline if ev.get("kind") != "crash"]
        bug["timeline_svg"] = render_timeline(events, crash_index) if events else ""
        # a threaded bug: one lane per thread (harness/render/lanes_svg.py); none for a single thread
        lanes = bug.get("lanes") or []
        bug["lanes_svg"] = render_lanes(lanes, bug.get("preemptions") or [], bug.get("lanes_crash")) if lanes else ""
        bugs.append(bug)
        counts = by_class.setdefault(bug["class"], Counter())
        counts["expected" if bug.get("expected") else "unexpected"] += 1
    # Unexpected bugs first: they are what the run is about.
    bugs.sort(key=lambda b: (bool(b.get("expected")), b["structure"], b["class"], b["id"]))
    rows = results.get("per_structure") or [{
        "structure": ", ".join(results.get("structures", [])), "bug": None, "stats": results["stats"],
        "unexpected": sum(1 for b in bugs if not b.get("expected")),
        "expected": sum(1 for b in bugs if b.get("expected"))}]
    title = ", ".join(results.get("structures", [])) or "run"
    sampled = sum(int((row.get("stats") or {}).get("points_sampled") or 0) for row in rows)
    return {"results": results, "rows": rows, "bugs": bugs, "title": title, "sampled": sampled,
            "by_class": {k: {"unexpected": v["unexpected"], "expected": v["expected"]}
                         for k, v in sorted(by_class.items())}}


def render(results: dict) -> str:
    import jinja2   # here, not at the top: `crashcheck run` without --report never needs it (start-up)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.globals.update(source=_source, stores=_stores, site_text=site_text, max_switches=MAX_SWITCHES,
                       fix_view=fix_view, perf_view=perf_view)
    env.filters["big"] = big
    return env.get_template("report.html.j2").render(**prepare(results))


def write_atomic(path: str | os.PathLike, text: str) -> None:
    """Write TEXT to PATH so readers never see a half-written file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    # mkstemp makes the file private (0600); give it the mode a plain open() would.
    umask = os.umask(0)
    os.umask(umask)
    os.fchmod(fd, 0o666 & ~umask)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_report(results: dict, path: str | os.PathLike) -> Path:
    write_atomic(path, render(results))
    return Path(path)


def write_run(results: dict, bugdir: Path, json_path: str | os.PathLike | None = None,
              report_path: str | os.PathLike | None = None) -> None:
    """Everything a fuzz run leaves behind, each file written atomically: one record per bug in
    BUGDIR (what `crashcheck replay` takes), the results file, the HTML report."""
    if results["bugs"]:
        bugdir.mkdir(parents=True, exist_ok=True)
        for b in results["bugs"]:
            write_atomic(bugdir / f"{b['id']}.json", json.dumps(b, indent=1) + "\n")
    remove_old_records(bugdir, {f"{b['id']}.json" for b in results["bugs"]})
    if json_path:
        write_atomic(json_path, json.dumps(results, indent=1) + "\n")
    if report_path:
        write_report(results, report_path)


def remove_old_records(bugdir: Path, keep: set[str]) -> int:
    """Delete the bug records an earlier run left in BUGDIR (files that parse as crashcheck bug
    records and are not in KEEP), so a reused folder never mixes two runs. Anything else stays."""
    if not bugdir.is_dir():
        return 0
    removed = 0
    for path in bugdir.glob("*.json"):
        if path.name in keep or not path.is_file():
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and {"id", "class", "history", "crash", "replay"} <= data.keys():
            try:
                path.unlink()
                removed += 1
            except OSError:
                pass
    return removed


def load_results(path: str | os.PathLike) -> dict:
    return json.loads(Path(path).read_text())
