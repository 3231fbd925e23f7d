"""Notebook HTML for the DAG, a node and a rendered context.

Owns the self-contained (no network) HTML behind `_repr_html_`: the call tree as nested
<details> per frame with status colours, durations, tokens and cost. Reads nodes only.
"""

from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.dag import ContextDAG, Node
    from openprogram.render import RenderedContext

__all__ = ["context_html", "dag_html", "node_html"]

_STYLE = """<style>
.op{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;color:#222}
.op details{margin-left:14px;border-left:2px solid #ddd;padding-left:6px}
.op summary{cursor:pointer;list-style:none}.op .leaf{margin-left:20px}
.op .completed{color:#1a7f37}.op .error{color:#cf222e}.op .running{color:#9a6700}
.op .cancelled{color:#6e7781}.op .meta{color:#6e7781}.op pre{white-space:pre-wrap;margin:2px 0}
.op .role{font-weight:bold}
</style>"""

_MAX_TEXT = 400


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    if len(text) > _MAX_TEXT:
        text = text[:_MAX_TEXT] + f"… (+{len(text) - _MAX_TEXT} chars)"
    return html.escape(text)


def _summary(node: Node, dag: ContextDAG | None) -> str:
    k = f" #{dag.ordinal(node)}" if dag is not None and node.id in dag else ""
    parts = [f'<b>{html.escape(node.name)}{k}</b> <span class="meta">{node.kind}</span>']
    parts.append(f'<span class="{node.status}">{node.status}</span>')
    if node.duration_s is not None:
        parts.append(f'<span class="meta">{node.duration_s * 1000:.1f} ms</span>')
    if node.usage is not None:
        u = node.usage
        parts.append(
            f'<span class="meta">{u.input_tokens}→{u.output_tokens} tok ${u.cost_usd:.4f}</span>'
        )
    return " ".join(parts)


def _body(node: Node) -> str:
    rows = [f"<pre>input: {_short(node.input)}</pre>"]
    if node.status == "completed":
        rows.append(f"<pre>output: {_short(node.output)}</pre>")
    if node.error:
        rows.append(f'<pre class="error">error: {_short(node.error)}</pre>')
    return "".join(rows)


def node_html(node: Node, dag: ContextDAG | None = None) -> str:
    return f'{_STYLE}<div class="op">{_summary(node, dag)}{_body(node)}</div>'


def _tree(dag: ContextDAG, node: Node) -> str:
    children = dag.children(node.id)
    if not children:
        return f'<div class="leaf">{_summary(node, dag)}{_body(node)}</div>'
    inner = "".join(_tree(dag, child) for child in children)
    return f"<details><summary>{_summary(node, dag)}</summary>{_body(node)}{inner}</details>"


def dag_html(dag: ContextDAG) -> str:
    roots = "".join(_tree(dag, node) for node in dag.children(None))
    return f'{_STYLE}<div class="op"><div class="meta">{len(dag)} nodes</div>{roots}</div>'


def context_html(rendered: RenderedContext) -> str:
    rows = []
    for message in rendered.messages:
        content = message["content"]
        if isinstance(content, list):
            shown = "\n".join(p["text"] if p["type"] == "text" else "[image]" for p in content)
        else:
            shown = content
        rows.append(
            f'<div><span class="role">{message["role"]}</span><pre>{html.escape(shown)}</pre></div>'
        )
    report = "".join(
        f'<div class="meta">{html.escape(e["kind"])}: {html.escape(str(e["reason"]))}</div>'
        for e in rendered.report
    )
    return f'{_STYLE}<div class="op">{"".join(rows)}{report}</div>'
