"""Notebook HTML for the DAG, a node, a rendered context and one llm call.

Owns the self-contained (no network) HTML behind the `_repr_html_` methods. The DAG view
embeds a compact payload (_payload.py) and a script (_script.py) that builds the call
tree lazily; context and call views are static HTML. Start at dag_html().
"""

from __future__ import annotations

import html
import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openprogram.core.dag import _dag_of
from openprogram.core.node import register_view
from openprogram.display._images import thumbnail_url
from openprogram.display._payload import (
    DEFAULT_FULL_IMAGE_BUDGET,
    DEFAULT_IMAGE_BUDGET,
    DEFAULT_TEXT_BUDGET,
    build_payload,
    value_text,
)
from openprogram.display._script import SCRIPT
from openprogram.display._style import STYLE
from openprogram.errors import UsageError

if TYPE_CHECKING:
    from openprogram.core.dag import ContextDAG, Node
    from openprogram.display.calls import CallView, HiddenGroup
    from openprogram.render.render import RenderedContext

__all__ = ["call_html", "context_html", "dag_html", "node_html"]

_STATIC_ROOTS = 50


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def dag_html(
    dag: ContextDAG,
    *,
    focus: str | None = None,
    title: str | None = None,
    facts: Mapping[str, Any] | None = None,
    text_budget: int = DEFAULT_TEXT_BUDGET,
    image_budget: int = DEFAULT_IMAGE_BUDGET,
    thumbnail_px: int = 256,
    full_image_budget: int = DEFAULT_FULL_IMAGE_BUDGET,
) -> str:
    """The interactive call tree of a DAG as one self-contained HTML fragment.

    focus: a node id; the tree shows only that node's subtree (a run inside a session).
    title, facts: a heading and `{label: value}` lines shown above the tree.
    text_budget: characters of node values embedded; longer values are cut, longest
        first. image_budget: bytes of thumbnails embedded (each image once, downscaled
        to fit `thumbnail_px` pixels, and shown at that size); later images show as
        placeholders. full_image_budget: bytes of full-resolution images embedded for
        the lightbox (click a thumbnail: zoom, and flip between the screenshots of the
        same step, e.g. the raw screen and the marks the model saw).
    """
    if thumbnail_px < 16:
        raise UsageError(f"thumbnail_px={thumbnail_px!r} is too small; pass 16 or more pixels")
    payload = build_payload(
        dag,
        focus=focus,
        title=title,
        facts=facts,
        text_budget=text_budget,
        image_budget=image_budget,
        thumbnail_px=thumbnail_px,
        full_image_budget=full_image_budget,
    )
    view_id = "opv-" + uuid.uuid4().hex[:12]
    data = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
    # "<" never appears outside JSON strings, and escaping it keeps "</script>" inert
    data = data.replace("<", "\\u003c")
    return (
        f'<div class="opv" id="{view_id}">{STYLE}{_header(payload)}{_static_tree(dag, focus)}'
        f'<script type="application/json" id="{view_id}-data">{data}</script>'
        f"{SCRIPT.replace('%ID%', view_id)}</div>"
    )


def _header(payload: dict[str, Any]) -> str:
    total = payload["summary"]
    kinds, statuses = total["kinds"], total["statuses"]
    stats = [
        f"<b>{total['nodes']:,}</b> nodes",
        f"<b>{kinds.get('code', 0):,}</b> calls",
        f"<b>{kinds.get('llm', 0):,}</b> llm",
        f"<b>{total['input_tokens'] + total['output_tokens']:,}</b> tokens "
        f"({total['input_tokens']:,} in, {total['output_tokens']:,} out)",
        f"<b>{_usd(total['cost_usd'])}</b>"
        + (f" ({total['unpriced_calls']} unpriced)" if total["unpriced_calls"] else ""),
        f"<b>{_duration(total['duration_s'])}</b>",
    ]
    if statuses.get("error"):
        stats.append(f'<span class="opv-err"><b>{statuses["error"]}</b> errors</span>')
    if statuses.get("stopped"):
        stats.append(f'<span class="opv-stop"><b>{statuses["stopped"]}</b> stopped</span>')
    if statuses.get("running"):
        stats.append(f'<span class="opv-warn"><b>{statuses["running"]}</b> running</span>')
    if statuses.get("waiting"):
        stats.append(f'<span class="opv-wait"><b>{statuses["waiting"]}</b> waiting</span>')
    if statuses.get("unknown"):  # effect="once" calls interrupted: a person settles them
        stats.append(f'<span class="opv-unk"><b>{statuses["unknown"]}</b> unknown</span>')
    title = payload.get("title") or "context DAG"
    head = f'<div class="opv-head"><span class="opv-title">{_e(title)}</span>' + "".join(
        f'<span class="opv-stat">{s}</span>' for s in stats
    )
    head += "</div>"
    if payload["facts"]:
        head += '<dl class="opv-facts">' + "".join(
            f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in payload["facts"]
        )
        head += "</dl>"
    return head + _questions(payload.get("questions") or [])


def _questions(questions: list[list[Any]]) -> str:
    """The questions the run waits on, and how to answer them."""
    if not questions:
        return ""
    items = "".join(
        f'<li><span class="opv-q">{_e(text)}</span> <span class="opv-meta">answer: '
        f"{_e(expects)} · <code>session.answer({_e(repr(qid))}, value)</code></span></li>"
        for qid, text, expects, _ in questions
    )
    return (
        f'<div class="opv-questions"><b>Waiting for an answer</b> ({len(questions)})'
        f"<ul>{items}</ul></div>"
    )


def _static_tree(dag: ContextDAG, focus: str | None) -> str:
    """What shows where scripts do not run (an untrusted notebook, a plain viewer)."""
    roots = [dag.node(focus)] if focus is not None else dag.children(None)
    items = "".join(
        f'<div class="opv-row opv-s-{_status_code(n.status)}"><span class="opv-dot"></span>'
        f'<span class="opv-name">{_e(n.name)} <span class="opv-k">#{dag.ordinal(n)}</span></span>'
        f'<span class="opv-num">{_e(n.kind)} · {_e(n.status)}</span></div>'
        for n in roots[:_STATIC_ROOTS]
    )
    more = (
        f'<div class="opv-meta">and {len(roots) - _STATIC_ROOTS} more</div>'
        if len(roots) > _STATIC_ROOTS
        else ""
    )
    return (
        f'<div class="opv-static">{items}{more}<div class="opv-meta">The interactive tree '
        "needs JavaScript: trust the notebook, or open the HTML report in a browser.</div></div>"
    )


def _status_code(status: str) -> str:
    codes = {
        "completed": "c",
        "error": "e",
        "running": "r",
        "cancelled": "x",
        "stopped": "s",
        "waiting": "w",
        "unknown": "u",
    }
    return codes.get(status, "r")


def _usd(cost: float) -> str:
    return f"${cost:.4f}" if 0 < cost < 0.01 else f"${cost:.2f}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.2f} s"
    return f"{int(seconds // 60)} m {seconds % 60:.0f} s"


# -- single nodes --------------------------------------------------------------------------
def node_html(node: Node, dag: ContextDAG | None = None) -> str:
    """A node: for an llm node, the call view; for a frame, the tree of its subtree.

    Without `dag`, the DAG that holds this node is used (the node knows it while that
    DAG is alive); failing that, the node alone is shown.
    """
    dag = dag or _dag_of(node)
    if dag is not None and node.kind == "llm":
        from openprogram.display.calls import CallView

        return call_html(CallView(dag, node))
    if dag is not None and dag.children(node.id):
        return dag_html(dag, focus=node.id)
    return f'<div class="opv">{STYLE}{_node_block(node, dag)}</div>'


def _node_block(node: Node, dag: ContextDAG | None) -> str:
    k = f" #{dag.ordinal(node)}" if dag is not None else ""
    parts = [
        f'<div class="opv-head"><span class="opv-title">{_e(node.name)}{k}</span>'
        f'<span class="opv-stat">{_e(node.kind)} · {_e(node.status)}'
        f"{' · ' + _duration(node.duration_s) if node.duration_s is not None else ''}</span>"
    ]
    if node.usage is not None:
        u = node.usage
        parts.append(
            f'<span class="opv-stat">{u.input_tokens}→{u.output_tokens} tok '
            f"{_usd(u.cost_usd)}</span>"
        )
    parts.append("</div>")
    text, out = value_text(node)
    parts.append(f'<div class="opv-label">input</div><pre>{_e(text)}</pre>')
    if out:
        parts.append(f'<div class="opv-label">output</div><pre>{_e(out)}</pre>')
    if node.error:
        parts.append(
            f'<div class="opv-label">error</div><pre class="opv-err">{_e(node.error)}</pre>'
        )
    return "".join(parts)


# -- contexts ------------------------------------------------------------------------------
def context_html(rendered: RenderedContext, *, title: str | None = None) -> str:
    """A rendered context as the model gets it: system, history and content messages,
    images as thumbnails (each image once), and what the render left out or shortened."""
    dag = rendered.dag
    frame = rendered.frame
    where = f"{frame.name} #{dag.ordinal(frame)}" if frame is not None else "top level"
    heading = title or f"context of an llm() call in {where}"
    body = [
        f'<div class="opv-head"><span class="opv-title">{_e(heading)}</span>'
        f'<span class="opv-stat"><b>{len(rendered.nodes)}</b> nodes read</span>'
        f'<span class="opv-stat"><b>{len(rendered.messages)}</b> messages</span>'
        f'<span class="opv-stat"><b>{len(rendered.report)}</b> left out or shortened</span></div>'
    ]
    body.append(_messages_html(rendered))
    if rendered.report:
        body.append('<div class="opv-label">left out or shortened by the render</div>')
        body.extend(
            f'<div class="opv-warn">{_e(e["kind"])}: {_e(e["reason"])}</div>'
            for e in rendered.report
        )
    return f'<div class="opv">{STYLE}{"".join(body)}</div>'


def _messages_html(rendered: RenderedContext) -> str:
    dag = rendered.dag
    # internal (role, parts) with ImageRefs: the public .messages inline full-size PNGs
    turns: list[tuple[str, list[dict[str, Any]]]] = rendered._display_turns()
    seen: dict[str, int] = {}
    out = []
    for position, (role, parts) in enumerate(turns, 1):
        chunks = []
        for part in parts:
            if part.get("type") != "image":
                chunks.append(f"<pre>{_e(part.get('text', ''))}</pre>")
                continue
            ref = part["image"]
            name = f"sha256:{ref.sha256[:12]} {ref.width}×{ref.height}"
            if ref.sha256 in seen:
                chunks.append(
                    f'<span class="opv-noimg">{_e(name)}<br>same image as in message '
                    f"{seen[ref.sha256]}</span>"
                )
                continue
            seen[ref.sha256] = position
            image = dag.blobs.get(ref.sha256)
            if image is None:
                chunks.append(f'<span class="opv-noimg">{_e(name)}<br>not in the DAG</span>')
            else:
                url = thumbnail_url(image, 512)
                chunks.append(
                    f'<div class="opv-thumbs"><img src="{url}" title="{_e(name)}" '
                    f'alt="{_e(name)}" style="width:auto;max-width:320px"></div>'
                )
        out.append(
            f'<div class="opv-msg opv-msg-{_e(role.split(" ")[0])}">'
            f'<div class="opv-role">{_e(role)}</div>'
            f"{''.join(chunks)}</div>"
        )
    return "".join(out)


def _counted(group: HiddenGroup) -> str:
    nodes = f"{len(group.nodes)} node{'s' if len(group.nodes) != 1 else ''}"
    if not group.frames:
        return nodes
    return f"{nodes} in {len(group.frames)} call{'s' if len(group.frames) != 1 else ''}"


def _names(dag: ContextDAG, group: HiddenGroup, limit: int = 12) -> str:
    from openprogram.display.calls import label

    shown = group.frames or group.nodes
    names = ", ".join(label(dag, n) for n in shown[:limit])
    return names + (f" and {len(shown) - limit} more" if len(shown) > limit else "")


def call_html(view: CallView) -> str:
    """One llm call: its reply, the messages it saw (rebuilt), what was hidden from it
    and why, and the diff to the previous call of the same function."""
    from openprogram.display.calls import label

    dag, node = view.dag, view.node
    check = {
        True: '<span class="opv-ok">✓ rebuilt messages match the recorded hash</span>',
        False: '<span class="opv-warn">⚠ rebuilt messages differ from the recorded hash '
        "(the DAG changed since, or a callback rewrote the request)</span>",
        None: '<span class="opv-meta">no messages hash recorded</span>',
    }[view.verified]
    usage = node.usage
    parts = [
        f'<div class="opv-head"><span class="opv-title">what {_e(label(dag, node))} saw</span>'
        f'<span class="opv-stat">{_e(node.status)}</span>'
        + (
            f'<span class="opv-stat">{usage.input_tokens}→{usage.output_tokens} tok '
            f"{_usd(usage.cost_usd)}</span>"
            if usage is not None
            else ""
        )
        + f"<span>{check}</span></div>",
        '<div class="opv-label">reply</div>',
        f"<pre>{_e(node.output if node.output is not None else '')}</pre>",
    ]
    if node.error:
        parts.append(f'<pre class="opv-err">{_e(node.error)}</pre>')
    parts.append(f'<div class="opv-label">messages ({len(view.rendered.messages)})</div>')
    parts.append(_messages_html(view.rendered))
    for entry in view.rendered.report:
        parts.append(f'<div class="opv-warn">{_e(entry["kind"])}: {_e(entry["reason"])}</div>')
    parts.append(
        f"<details><summary><b>hidden from it</b> ({len(view.hidden)} earlier "
        f"node{'' if len(view.hidden) == 1 else 's'})</summary>"
    )
    for group in view.hidden_groups():
        parts.append(
            f'<div class="opv-group"><b>{_e(group.rule)}</b> <span class="opv-meta">'
            f"({_counted(group)})</span> {_e(_names(dag, group))}</div>"
        )
    parts.append("</details>")
    if view.previous is not None:
        changed = sum(1 for line in view.diff if line.op != " ")
        parts.append(
            f"<details><summary><b>diff vs {_e(label(dag, view.previous))}</b> "
            f'({changed} changed lines)</summary><div class="opv-diff">'
        )
        css = {" ": "opv-same", "-": "opv-del", "+": "opv-add"}
        parts.extend(
            f'<div class="{css[line.op]}">{line.op} {_e(line.text)}</div>' for line in view.diff
        )
        parts.append("</div></details>")
    return f'<div class="opv">{STYLE}{"".join(parts)}</div>'


register_view("dag", dag_html)
register_view("node", node_html)
register_view("context", context_html)
register_view("call", call_html)
