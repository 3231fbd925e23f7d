"""The operations panel of the HTML report: every operation of a session, its states
over time, attempts, effect, who asked it to stop and how it was settled.

Static HTML (no script), scoped under `.opv` like every view; the report (report.py)
places it under the call tree. Start at operations_html().
"""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

__all__ = ["collapsed", "operations_html", "session_operations"]

_COLOURS = {
    "done": "var(--ok)",
    "failed": "var(--err)",
    "running": "var(--run)",
    "pending": "var(--wait)",
    "cancelled": "var(--off)",
    "unknown": "var(--unk)",
}
_STYLE = """<style>
.opo h3{font-size:14px;margin:0 0 8px}.opo h3 small{font-weight:400;color:var(--mute)}
.opo-op{border:1px solid var(--line);border-radius:6px;padding:8px 10px;margin:0 0 8px}
.opo-top{display:flex;flex-wrap:wrap;gap:4px 12px;align-items:baseline}
.opo-id{font-weight:600}.opo-m{color:var(--mute)}
.opo-state{font-weight:600;padding:0 6px;border-radius:10px;color:#fff}
.opo-tag{border:1px solid var(--line);border-radius:10px;padding:0 6px;font-size:12px}
.opo-once{border-color:var(--unk);color:var(--unk)}
.opo-note{margin:4px 0 0;padding:3px 8px;border-left:3px solid var(--unk);background:#fbf8ff}
.opo-cancel{border-left-color:var(--stop);background:#fff8f1}
.opo-hand{border-left-color:var(--wait);background:#f1f8ff}
.opo table{border-collapse:collapse;margin:6px 0 0;width:100%}
.opo td{padding:1px 8px 1px 0;vertical-align:top}
.opo td.opo-t{white-space:nowrap;color:var(--mute);width:1%}
.opo td.opo-s{white-space:nowrap;width:1%}
.opo .opo-dot{display:inline-block;width:8px;height:8px;border-radius:50%;margin-right:5px}
.opo-val{margin:4px 0 0}
</style>"""
_PREVIEW = 400


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _when(at: float | None) -> str:
    if at is None:
        return ""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(at)) + f".{int(at % 1 * 1000):03d} UTC"


def _span(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + f"… ({len(text):,} characters)"


def session_operations(session: Any) -> tuple[list[Any], dict[str, list[Any]]]:
    """A Session's operations (OperationRecord) and each one's recorded events (the
    store's OperationEvent rows, by operation id); ([], {}) when it has none."""
    operations = getattr(session, "operations", None)
    if not callable(operations):
        return [], {}
    records = list(operations())
    events: dict[str, list[Any]] = {}
    read = getattr(getattr(session, "store", None), "operation_events", None)
    if records and callable(read):
        for event in read(session.id):
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
    cards = "".join(_card(r, list(events.get(r.id, ())), names or {}) for r in records)
    return (
        f'<div class="opv opo">{_STYLE}<h3>Operations ({len(records)}) '
        f"<small>{_e(summary)}</small></h3>{cards}</div>"
    )


def _card(record: Any, history: list[Any], names: Mapping[str, str]) -> str:
    colour = _COLOURS.get(record.state, "var(--off)")
    effect = f'<span class="opo-tag opo-{_e(record.effect)}">effect={_e(record.effect)}</span>'
    tags = [
        f'<span class="opo-id opv-mono">{_e(record.id)}</span>',
        f"<span>{_e(record.kind)} v{_e(record.version)}</span>",
        f'<span class="opo-state" style="background:{colour}">{_e(record.state)}</span>',
        effect,
        f'<span class="opo-m">attempts {record.attempts}</span>',
    ]
    if record.background:
        tags.append('<span class="opo-tag">background</span>')
    called = names.get(record.node, record.node)
    tags.append(f'<span class="opo-m">from tool call {_e(called)}</span>')
    parts = [f'<div class="opo-op"><div class="opo-top">{"".join(tags)}</div>']
    parts.append(f'<div class="opo-val opo-m">args <code>{_e(_preview(record.args))}</code></div>')
    if record.state == "done":
        parts.append(
            f'<div class="opo-val">result <code>{_e(_preview(record.result))}</code></div>'
        )
    elif record.error:
        parts.append(f'<div class="opo-val">error <code>{_e(_preview(record.error))}</code></div>')
    parts += _notes(history)
    runs = collapsed(history)
    if runs:
        rows = []
        for i, (event, count, _) in enumerate(runs):
            lasted = ""
            if i + 1 < len(runs):
                lasted = f" for {_span(max(0.0, runs[i + 1][0].at - event.at))}"
            if count > 1:
                lasted += f" ({count} heartbeats)"
            dot = _COLOURS.get(event.state, "var(--off)")
            rows.append(
                f'<tr><td class="opo-t">{_e(_when(event.at))}</td><td class="opo-s">'
                f'<span class="opo-dot" style="background:{dot}"></span>{_e(event.state)}'
                f'<span class="opo-m">{_e(lasted)}</span></td>'
                f"<td>{_e(event.detail or '')}</td></tr>"
            )
        parts.append(f"<table>{''.join(rows)}</table>")
    parts.append("</div>")
    return "".join(parts)


def _notes(history: list[Any]) -> list[str]:
    """What a reader looks for first: who asked it to stop, who settled it, and an
    operation handed back by a process that stopped (a SIGTERM drain)."""
    notes = []
    for event in history:
        detail = event.detail or ""
        if detail.startswith("cancel requested by "):
            notes.append(("opo-cancel", f"{detail} at {_when(event.at)}"))
        elif detail.startswith("settled"):
            notes.append(("", f"{detail} at {_when(event.at)} (now {event.state})"))
        elif detail.startswith("handed back"):
            notes.append(("opo-hand", f"{detail} at {_when(event.at)}"))
    return [f'<div class="opo-note {kind}">{_e(text)}</div>' for kind, text in notes]
