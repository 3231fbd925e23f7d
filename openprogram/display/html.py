"""Notebook HTML for the DAG, a node, a rendered context and one llm call.

Owns the self-contained (no network) HTML behind the `_repr_html_` methods. The DAG view
embeds a compact payload (_payload.py) and a script (_script.py) that builds the call
tree lazily; context and call views are static HTML. Start at dag_html().
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from openprogram.core.dag import dag_of
from openprogram.core.node import register_view
from openprogram.display._hiding import label
from openprogram.display._images import thumbnail_url
from openprogram.display._payload import (
    DEFAULT_FULL_IMAGE_BUDGET,
    DEFAULT_IMAGE_BUDGET,
    DEFAULT_TEXT_BUDGET,
    build_payload,
    value_text,
)
from openprogram.display._script import SCRIPT
from openprogram.errors import UsageError
from openprogram.pages import render, trusted

if TYPE_CHECKING:
    from openprogram.core.dag import ContextDAG, Node
    from openprogram.display.calls import CallView
    from openprogram.render.render import RenderedContext

__all__ = ["call_html", "context_html", "dag_html", "node_html"]

_STATIC_ROOTS = 50


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
    styled: bool = True,
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
    styled: inline the stylesheet (False: the page around it has it already).
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
    roots = [dag.node(focus)] if focus is not None else dag.children(None)
    return render(
        "dag.html.j2",
        id=view_id,
        styled=styled,
        title=payload.get("title") or "context DAG",
        stats=_stats(payload),
        facts=payload["facts"],
        questions=[
            {"text": text, "expects": expects, "id": repr(qid)}
            for qid, text, expects, _ in payload.get("questions") or []
        ],
        rows=[
            {
                "code": _status_code(n.status),
                "name": n.name,
                "k": dag.ordinal(n),
                "kind": n.kind,
                "status": n.status,
            }
            for n in roots[:_STATIC_ROOTS]
        ],
        more=max(0, len(roots) - _STATIC_ROOTS),
        data=trusted(data),
        script=trusted(SCRIPT.replace("%ID%", view_id)),
    )


def _stats(payload: dict[str, Any]) -> list[dict[str, str]]:
    """The header's figures: nodes, calls, tokens, cost, time, and any calls in a state
    that asks for a look (errors, stopped, running, waiting, unknown)."""
    total = payload["summary"]
    kinds, statuses = total["kinds"], total["statuses"]
    tokens = total["input_tokens"] + total["output_tokens"]
    unpriced = total["unpriced_calls"]

    def stat(value: str, text: str = "", css: str = "") -> dict[str, str]:
        return {"value": value, "text": text, "css": css}

    stats = [
        stat(f"{total['nodes']:,}", "nodes"),
        stat(f"{kinds.get('code', 0):,}", "calls"),
        stat(f"{kinds.get('llm', 0):,}", "llm"),
        stat(
            f"{tokens:,}",
            f"tokens ({total['input_tokens']:,} in, {total['output_tokens']:,} out)",
        ),
        stat(_usd(total["cost_usd"]), f"({unpriced} unpriced)" if unpriced else ""),
        stat(_duration(total["duration_s"])),
    ]
    for status, css in (
        ("error", "opv-err"),
        ("stopped", "opv-stop"),
        ("running", "opv-warn"),
        ("waiting", "opv-wait"),
        ("unknown", "opv-unk"),  # effect="once" calls interrupted: a person settles them
    ):
        if statuses.get(status):
            stats.append(
                stat(str(statuses[status]), "errors" if status == "error" else status, css)
            )
    return stats


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
    dag = dag or dag_of(node)
    if dag is not None and node.kind == "llm":
        from openprogram.display.calls import CallView

        return call_html(CallView(dag, node))
    if dag is not None and dag.children(node.id):
        return dag_html(dag, focus=node.id)
    text, out = value_text(node)
    usage = node.usage
    block = {
        "name": node.name,
        "k": f" #{dag.ordinal(node)}" if dag is not None else "",
        "kind": node.kind,
        "status": node.status,
        "duration": _duration(node.duration_s) if node.duration_s is not None else "",
        "usage": None
        if usage is None
        else f"{usage.input_tokens}→{usage.output_tokens} tok {_usd(usage.cost_usd)}",
        "input": text,
        "output": out,
        "error": node.error,
    }
    return render("node.html.j2", n=block)


# -- contexts ------------------------------------------------------------------------------
def context_html(rendered: RenderedContext, *, title: str | None = None) -> str:
    """A rendered context as the model gets it: system, history and content messages,
    images as thumbnails (each image once), and what the render left out or shortened."""
    dag = rendered.dag
    frame = rendered.frame
    where = f"{frame.name} #{dag.ordinal(frame)}" if frame is not None else "top level"
    return render(
        "context.html.j2",
        heading=title or f"context of an llm() call in {where}",
        nodes=len(rendered.nodes),
        message_count=len(rendered.messages),
        turns=_turns(rendered),
        report=rendered.report,
    )


def _turns(rendered: RenderedContext) -> list[dict[str, Any]]:
    """Each message the call saw: its role and its parts, text or an image (a thumbnail,
    each image once: a later copy names the message that showed it)."""
    dag = rendered.dag
    # internal (role, parts) with ImageRefs: the public .messages inline full-size PNGs
    turns: list[tuple[str, list[dict[str, Any]]]] = rendered.display_turns()
    seen: dict[str, int] = {}
    out = []
    for position, (role, parts) in enumerate(turns, 1):
        chunks: list[dict[str, Any]] = []
        for part in parts:
            if part.get("type") != "image":
                chunks.append({"text": str(part.get("text", "")), "url": None})
                continue
            ref = part["image"]
            name = f"sha256:{ref.sha256[:12]} {ref.width}×{ref.height}"
            if ref.sha256 in seen:
                why = f"same image as in message {seen[ref.sha256]}"
                chunks.append({"text": None, "url": None, "name": name, "why": why})
                continue
            seen[ref.sha256] = position
            image = dag.blobs.get(ref.sha256)
            if image is None:
                chunks.append({"text": None, "url": None, "name": name, "why": "not in the DAG"})
            else:
                url = thumbnail_url(image, 512)
                chunks.append({"text": None, "name": name, "url": url})
        out.append({"css": role.split(" ")[0], "role": role, "chunks": chunks})
    return out


def call_html(view: CallView) -> str:
    """One llm call: its reply, the messages it saw (rebuilt), what was hidden from it
    and why, and the diff to the previous call of the same function."""
    dag, node = view.dag, view.node
    usage = node.usage
    css = {" ": "opv-same", "-": "opv-del", "+": "opv-add"}
    return render(
        "call.html.j2",
        label=label(dag, node),
        status=node.status,
        usage=None
        if usage is None
        else f"{usage.input_tokens}→{usage.output_tokens} tok {_usd(usage.cost_usd)}",
        verified=view.verified,
        reply=node.output if node.output is not None else "",
        error=node.error,
        message_count=len(view.rendered.messages),
        turns=_turns(view.rendered),
        report=view.rendered.report,
        hidden=len(view.hidden),
        groups=[
            {"rule": g.rule, "counted": g.counted(), "names": g.names(dag)}
            for g in view.hidden_groups()
        ],
        previous=None if view.previous is None else label(dag, view.previous),
        changed=sum(1 for line in view.diff if line.op != " "),
        diff=[{"css": css[line.op], "op": line.op, "text": line.text} for line in view.diff],
    )


register_view("dag", dag_html)
register_view("node", node_html)
register_view("context", context_html)
register_view("call", call_html)
