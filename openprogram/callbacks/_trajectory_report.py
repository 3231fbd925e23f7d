"""The report.html of a TrajectorySaver run: one self-contained page per run.

Owns the markup and inline CSS; reads the request and reply JSON files the saver wrote.
No scripts and no network: images are relative links into the run folder.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from openprogram.core.usage import Usage

__all__ = ["render_report"]

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,sans-serif;margin:2em auto;max-width:1100px;
color:#1d2330;padding:0 1em}
h1 small{font-weight:normal;color:#667}
.status{padding:.1em .6em;border-radius:1em;font-size:.8em;color:#fff;background:#667}
.completed{background:#1a7f37}.failed{background:#cf222e}.stopped{background:#9a6700}
.running{background:#0969da}
table.meta td{padding:.15em .8em .15em 0;vertical-align:top}table.meta td:first-child{color:#667}
section.step{border-top:1px solid #d0d7de;padding:.6em 0}
.shots img{max-width:320px;max-height:240px;border:1px solid #d0d7de;margin:0 .5em .5em 0}
pre{background:#f6f8fa;padding:.5em;overflow-x:auto;white-space:pre-wrap;margin:.3em 0}
details{border:1px solid #d0d7de;border-radius:6px;margin:.4em 0;padding:.3em .6em}
summary{cursor:pointer}.role{font-weight:600;color:#57606a}.msg img{max-width:240px}
.error{color:#cf222e}.ok{color:#1a7f37}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


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
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{_e(meta['name'])} — {_e(meta['status'])}</title><style>{_CSS}</style>",
        "</head><body>",
        f"<h1>{_e(meta['name'])} <span class='status {_e(meta['status'])}'>"
        f"{_e(meta['status'])}</span></h1><table class='meta'>",
        *(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows),
        "</table>",
        f"<h2>Input</h2><pre>{_e(_pretty(meta['input']))}</pre>",
        f"<h2>Output</h2><pre>{_e(_pretty(meta['output']))}</pre>",
    ]
    if meta["callback_errors"]:
        items = "".join(f"<li>{_e(x)}</li>" for x in meta["callback_errors"])
        out.append(f"<h2>Callback errors</h2><ul class='error'>{items}</ul>")
    out.append(f"<h2>Steps ({len(steps)})</h2>")
    out.extend(_step_html(steps[number]) for number in sorted(steps))
    out.append(f"<h2>Model exchanges ({len(exchanges)})</h2>")
    out.extend(_exchange_html(folder, record) for record in exchanges)
    out.append("</body></html>")
    return "\n".join(out)


def _image_link(name: str, alt: str) -> str:
    return f"<a href='{_e(name)}'><img src='{_e(name)}' alt='{_e(alt)}' loading='lazy'></a>"


def _step_html(entry: dict[str, Any]) -> str:
    shots = [_image_link(name, f"step {entry['step']}") for name in entry["screenshots"]]
    actions = []
    for record in entry["actions"]:
        if record.get("annotated"):
            shots.append(_image_link(record["annotated"], f"action {record['index']}"))
        state = ""
        if "ok" in record:
            state = (
                " <span class='ok'>ok</span>"
                if record["ok"]
                else f" <span class='error'>{_e(record.get('error'))}</span>"
            )
        actions.append(f"<li><code>{_e(json.dumps(record['action']))}</code>{state}</li>")
    return (
        f"<section class='step'><h3>Step {entry['step']}</h3>"
        f"<div class='shots'>{''.join(shots)}</div><ol>{''.join(actions)}</ol></section>"
    )


def _exchange_html(folder: Path, record: dict[str, Any]) -> str:
    request = _read_json(folder / record["request"])
    reply = _read_json(folder / record["reply"]) if record.get("reply") else None
    usage = record.get("usage")
    summary = f"#{record['index']} {_e(record.get('frame') or 'top level')}"
    if usage:
        summary += (
            f" — {usage['input_tokens']} in / {usage['output_tokens']} out, "
            f"${usage['cost_usd']:.4f}"
        )
    body = [f"<a href='{_e(record['request'])}'>request JSON</a>"]
    for message in (request or {}).get("messages", []):
        body.append(f"<div class='msg'><span class='role'>{_e(message.get('role'))}</span>")
        content = message.get("content")
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, dict) and part.get("type") == "image" and part.get("image"):
                body.append(_image_link(part["image"], "request image"))
            elif isinstance(part, dict):
                body.append(f"<pre>{_e(part.get('text', part))}</pre>")
            else:
                body.append(f"<pre>{_e(part)}</pre>")
        body.append("</div>")
    if reply is None:
        body.append("<p class='error'>no reply recorded (the call failed or was stopped)</p>")
    else:
        body.append(
            f"<div class='msg'><span class='role'>reply</span> "
            f"(<a href='{_e(record['reply'])}'>JSON</a>)<pre>{_e(reply.get('reply'))}</pre></div>"
        )
    return f"<details><summary>{summary}</summary>{''.join(body)}</details>"


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return None
