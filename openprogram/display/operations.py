"""The operations panel of the HTML report: every operation of a session, its states
over time, attempts, effect, who asked it to stop and how it was settled.

Static HTML (no script) rendered through pages (templates/operations.html.j2), scoped
under `.opv` like every view; the report (report.py) places it under the call tree, on a
page that carries the stylesheet. Start at operations_html().
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from openprogram.pages import render

__all__ = ["collapsed", "operations_html", "session_operations"]

_COLOURS = {
    "done": "var(--ok)",
    "failed": "var(--err)",
    "running": "var(--run)",
    "pending": "var(--wait)",
    "cancelled": "var(--off)",
    "unknown": "var(--unk)",
}
_PREVIEW = 400


def _when(at: float | None) -> str:
    if at is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d} UTC"


def _span(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + f"… ({len(text):,} characters)"


def session_operations(session: object) -> tuple[list[Any], dict[str, list[Any]]]:
    """A Session's operations (OperationRecord) and each one's recorded events (the
    store's OperationEvent rows, by operation id); ([], {}) when it has none."""
    operations = getattr(session, "operations", None)
    if not callable(operations):
        return [], {}
    records = list(operations())
    events: dict[str, list[Any]] = {}
    read = getattr(getattr(session, "store", None), "operation_events", None)
    if records and callable(read):
        for event in read(getattr(session, "id", None)):
            events.setdefault(event.operation, []).append(event)
    return records, events


def collapsed(history: Iterable[Any]) -> list[tuple[Any, int, float]]:
    """`history` (OperationEvent rows, in order) with each run of events of one state and
    detail (a running operation's heartbeats) kept as its first: (event, how many, when
    the last was)."""
    runs: list[tuple[Any, int, float]] = []
    for event in history:
        if runs and (runs[-1][0].state, runs[-1][0].detail) == (event.state, event.detail):
            first, count, _ = runs[-1]
            runs[-1] = (first, count + 1, event.at)
        else:
            runs.append((event, 1, event.at))
    return runs


def operations_html(
    records: Sequence[Any],
    events: Mapping[str, Iterable[Any]],
    names: Mapping[str, str] | None = None,
) -> str:
    """The panel: one card per operation (OperationRecord), oldest first, with its
    events (OperationEvent: at, state, detail) as a timeline; `names` maps a tool call
    node's id to how the report names it. "" when there are none."""
    if not records:
        return ""
    counts: dict[str, int] = {}
    for record in records:
        counts[record.state] = counts.get(record.state, 0) + 1
    summary = " · ".join(f"{n} {state}" for state, n in sorted(counts.items()))
    cards = [_card(r, list(events.get(r.id, ())), names or {}) for r in records]
    return render("operations.html.j2", summary=summary, cards=cards)


def _card(record: Any, history: list[Any], names: Mapping[str, str]) -> dict[str, Any]:
    runs = collapsed(history)
    rows = []
    for i, (event, count, _) in enumerate(runs):
        lasted = ""
        if i + 1 < len(runs):
            lasted = f" for {_span(max(0.0, runs[i + 1][0].at - event.at))}"
        if count > 1:
            lasted += f" ({count} heartbeats)"
        rows.append(
            {
                "when": _when(event.at),
                "dot": _COLOURS.get(event.state, "var(--off)"),
                "state": event.state,
                "lasted": lasted,
                "detail": event.detail or "",
            }
        )
    done = record.state == "done"
    return {
        "id": record.id,
        "kind": record.kind,
        "version": record.version,
        "colour": _COLOURS.get(record.state, "var(--off)"),
        "state": record.state,
        "effect": record.effect,
        "attempts": record.attempts,
        "background": record.background,
        "called": names.get(record.node, record.node),
        "args": _preview(record.args),
        "result": _preview(record.result) if done else None,
        "error": _preview(record.error) if not done and record.error else None,
        "notes": _notes(history),
        "rows": rows,
    }


def _notes(history: list[Any]) -> list[tuple[str, str]]:
    """What a reader looks for first: who asked it to stop, who settled it, and an
    operation handed back by a process that stopped (a SIGTERM drain): (css, text)."""
    notes = []
    for event in history:
        detail = event.detail or ""
        if detail.startswith("cancel requested by "):
            notes.append(("opo-cancel", f"{detail} at {_when(event.at)}"))
        elif detail.startswith("settled"):
            notes.append(("", f"{detail} at {_when(event.at)} (now {event.state})"))
        elif detail.startswith("handed back"):
            notes.append(("opo-hand", f"{detail} at {_when(event.at)}"))
    return notes
