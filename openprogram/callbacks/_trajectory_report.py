"""The report.html of a TrajectorySaver run: one self-contained page per run.

Owns what the page shows, rendered through pages (templates/trajectory.html.j2, the one
stylesheet inline); reads the request and reply JSON files the saver wrote. No scripts
and no network: images are relative links into the run folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openprogram.core.usage import Usage
from openprogram.pages import render

__all__ = ["render_report"]


def _pretty(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def render_report(
    meta: dict[str, Any],
    steps: dict[int, dict[str, Any]],
    exchanges: list[dict[str, Any]],
    folder: Path,
) -> str:
    """The self-contained report: inline CSS, images as relative links, no scripts.

    `meta` is the run's metadata.json content; `steps` and `exchanges` the saver's
    records; request and reply JSON files are read from `folder`.
    """
    usage = Usage(**meta["usage"])
    cost = f"${usage.cost_usd:.4f}" + (
        f" (+{usage.unpriced_calls} call(s) of unknown cost)" if usage.unpriced_calls else ""
    )
    rows = [
        ("run", meta["run_id"]),
        ("session", meta["session"]),
        ("started", meta["started_at"]),
        ("duration", f"{meta['duration_s']:.2f} s" if meta["duration_s"] is not None else "—"),
        ("model calls", usage.calls),
        (
            "tokens",
            f"{usage.input_tokens} in ({usage.cached_tokens} cached) / "
            f"{usage.output_tokens} out ({usage.reasoning_tokens} reasoning)",
        ),
        ("cost", cost),
    ]
    if meta["stop_reason"]:
        rows.append(("stop reason", meta["stop_reason"]))
    if meta["error"]:
        rows.append(("error", meta["error"]))
    return render(
        "trajectory.html.j2",
        title=f"{meta['name']} — {meta['status']}",
        kind="opt",
        name=meta["name"],
        status=meta["status"],
        rows=rows,
        input=_pretty(meta["input"]),
        output=_pretty(meta["output"]),
        callback_errors=meta["callback_errors"],
        steps=[_step(steps[number]) for number in sorted(steps)],
        exchanges=[_exchange(folder, record) for record in exchanges],
    )


def _step(entry: dict[str, Any]) -> dict[str, Any]:
    shots = [{"name": name, "alt": f"step {entry['step']}"} for name in entry["screenshots"]]
    actions = []
    for record in entry["actions"]:
        if record.get("annotated"):
            shots.append({"name": record["annotated"], "alt": f"action {record['index']}"})
        actions.append(
            {
                "action": json.dumps(record["action"]),
                "ok": record.get("ok"),
                "error": record.get("error"),
            }
        )
    return {"step": entry["step"], "shots": shots, "actions": actions}


def _exchange(folder: Path, record: dict[str, Any]) -> dict[str, Any]:
    request = _read_json(folder / record["request"])
    reply = _read_json(folder / record["reply"]) if record.get("reply") else None
    usage = record.get("usage")
    summary = f"#{record['index']} {record.get('frame') or 'top level'}"
    if usage:
        summary += (
            f" — {usage['input_tokens']} in / {usage['output_tokens']} out, "
            f"${usage['cost_usd']:.4f}"
        )
    messages = []
    for message in (request or {}).get("messages", []):
        content = message.get("content")
        parts = []
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, dict) and part.get("type") == "image" and part.get("image"):
                parts.append({"image": part["image"], "text": None})
            elif isinstance(part, dict):
                parts.append({"image": None, "text": part.get("text", part)})
            else:
                parts.append({"image": None, "text": part})
        messages.append({"role": message.get("role"), "parts": parts})
    return {
        "summary": summary,
        "request": record["request"],
        "messages": messages,
        "replied": reply is not None,
        "reply": None if reply is None else reply.get("reply"),
        "reply_file": record.get("reply"),
    }


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
