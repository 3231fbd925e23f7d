"""Exports of a context DAG: networkx, GraphML, Mermaid, DOT and JSON.

Owns turning nodes into plain attributes (strings and numbers, values as JSON text) and
the text formats. The live `dag.graph` stays the DAG's own; to_networkx() returns a copy
without the Node objects, fit for writing out. Start at write_export().
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from openprogram.core import _secrets
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.values import escape_surrogates, replace_surrogates
from openprogram.display._payload import value_text
from openprogram.errors import UsageError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "ExportFormat",
    "export_text",
    "to_dot",
    "to_graphml",
    "to_json",
    "to_mermaid",
    "to_networkx",
    "write_export",
]

ExportFormat = Literal["graphml", "mermaid", "dot", "json"]
"""graphml (yEd, Gephi, networkx), mermaid (Markdown diagrams), dot (Graphviz), json
(ContextDAG.to_dict(): the whole DAG, images included, loadable with from_dict)."""

_SUFFIXES: dict[str, ExportFormat] = {
    ".graphml": "graphml",
    ".xml": "graphml",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
    ".md": "mermaid",
    ".dot": "dot",
    ".gv": "dot",
    ".json": "json",
}
_COLOURS = {
    "completed": "#1a7f37",
    "error": "#cf222e",
    "running": "#9a6700",
    "cancelled": "#6e7781",
    "stopped": "#bc4c00",
    "waiting": "#0969da",
    "unknown": "#8250df",
}
_LABEL_CHARS = 60


def _attributes(dag: ContextDAG, node: Node) -> dict[str, Any]:
    """A node as GraphML-safe attributes: str, int, float or bool, never None."""
    text, out = value_text(node)
    attributes: dict[str, Any] = {
        "kind": node.kind,
        "name": node.name,
        "ordinal": dag.ordinal(node),
        "seq": node.seq,
        "status": node.status,
        "expose": node.expose,
        "branch": node.branch,
        "input": text,
        "output": out,
        "error": node.error or "",
        "started_at": node.started_at,
        "duration_s": node.duration_s if node.duration_s is not None else -1.0,
        "reads": json.dumps(node.reads),
        "label": f"{node.name} #{dag.ordinal(node)}",
    }
    if node.render_range is not None:
        attributes["render_range"] = node.render_range.model_dump_json()
    if node.usage is not None:
        attributes.update(
            input_tokens=node.usage.input_tokens,
            output_tokens=node.usage.output_tokens,
            cost_usd=node.usage.cost_usd,
        )
    return attributes


def to_networkx(dag: ContextDAG, *, reads: bool = False) -> nx.DiGraph:
    """A standalone copy of the DAG graph with plain attributes (see _attributes).

    Edges: parent→child kind="calls", predecessor→node kind="follows"; with `reads`,
    also read→llm node kind="reads" (what each llm call saw).
    """
    import networkx as nx

    graph = nx.DiGraph()
    for node in dag.nodes:
        graph.add_node(node.id, **_attributes(dag, node))
    for node in dag.nodes:
        if node.parent is not None:
            graph.add_edge(node.parent, node.id, kind="calls")
        if node.predecessor is not None:
            graph.add_edge(node.predecessor, node.id, kind="follows")
        if reads and node.kind == "llm":
            for source in node.reads:
                if source in graph and not graph.has_edge(source, node.id):
                    graph.add_edge(source, node.id, kind="reads")
    return graph


def to_graphml(dag: ContextDAG, *, reads: bool = False) -> str:
    """GraphML text of to_networkx(dag)."""
    buffer = io.BytesIO()
    import networkx as nx

    nx.write_graphml(to_networkx(dag, reads=reads), buffer, encoding="utf-8")
    return buffer.getvalue().decode("utf-8")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LABEL_CHARS else text[: _LABEL_CHARS - 1] + "…"


def to_mermaid(dag: ContextDAG, *, values: bool = False) -> str:
    """A Mermaid flowchart: calls as solid arrows, top-level order as dotted ones.

    Node ids are `n{seq}`; labels are `name #k` and the status (and, with `values`,
    a shortened output). Paste it into Markdown inside a ```mermaid block.
    """
    lines = ["flowchart TD"]
    for status, colour in _COLOURS.items():
        lines.append(f"  classDef {status} stroke:{colour},stroke-width:2px")
    for node in dag.nodes:
        label = f"{node.name} #{dag.ordinal(node)}"
        if node.kind == "llm":
            label += " (llm)"
        detail: str = node.status
        if values:
            detail = _short(node.error or value_text(node)[1]) or node.status
        text = _mermaid_text(f"{label}<br/>{detail}" if detail else label)
        shape = ('(["', '"])') if node.kind == "llm" else ('["', '"]')
        lines.append(f"  n{node.seq}{shape[0]}{text}{shape[1]}:::{node.status}")
    for node in dag.nodes:
        if node.parent is not None:
            lines.append(f"  n{dag.node(node.parent).seq} --> n{node.seq}")
        if node.predecessor is not None:
            lines.append(f"  n{dag.node(node.predecessor).seq} -.-> n{node.seq}")
    return "\n".join(lines) + "\n"


def _mermaid_text(text: str) -> str:
    keep = text.replace("<br/>", "\x00")
    escaped = "".join(f"#{ord(c)};" if c in '"#<>&' else c for c in keep)
    return escaped.replace("\x00", "<br/>")


def _dot_text(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def to_dot(dag: ContextDAG, *, values: bool = False) -> str:
    """Graphviz DOT text: boxes for calls, ellipses for llm exchanges, notes for user input;
    solid edges for calls, dashed for top-level order."""
    lines = [
        "digraph context_dag {",
        "  rankdir=TB;",
        '  node [fontname="Helvetica", fontsize=10];',
    ]
    shapes = {"code": "box", "llm": "ellipse", "user": "note"}
    for node in dag.nodes:
        label = f"{node.name} #{dag.ordinal(node)}\n{node.status}"
        if values:
            detail = _short(node.error or value_text(node)[1])
            if detail:
                label += f"\n{detail}"
        lines.append(
            f'  "{_dot_text(node.id)}" [label="{_dot_text(label)}", shape={shapes[node.kind]}, '
            f'color="{_COLOURS.get(node.status, "#000000")}"];'
        )
    for node in dag.nodes:
        if node.parent is not None:
            lines.append(f'  "{_dot_text(node.parent)}" -> "{_dot_text(node.id)}";')
        if node.predecessor is not None:
            lines.append(
                f'  "{_dot_text(node.predecessor)}" -> "{_dot_text(node.id)}" [style=dashed];'
            )
    lines.append("}")
    return "\n".join(lines) + "\n"


def to_json(dag: ContextDAG, *, indent: int | None = None) -> str:
    """JSON text of dag.to_dict(): every node and the images; ContextDAG.from_dict reads it.
    Secret values (API keys, tokens) are masked; lone surrogates are escaped."""
    text = json.dumps(dag.to_dict(), ensure_ascii=False, indent=indent)
    return escape_surrogates(_secrets.scrub_json(text) or text)


def export_format(path: str | os.PathLike[str], format: str | None = None) -> ExportFormat:
    """The format named, or the one the file suffix implies; UsageError when neither."""
    if format is not None:
        if format not in ("graphml", "mermaid", "dot", "json"):
            raise UsageError(f"format={format!r} is not one of 'graphml', 'mermaid', 'dot', 'json'")
        return format  # type: ignore[return-value]
    suffix = Path(path).suffix.lower()
    if suffix not in _SUFFIXES:
        raise UsageError(
            f"cannot tell the export format from {str(path)!r}; use a .graphml, .mmd, .dot or "
            ".json file name, or pass format='graphml' (or 'mermaid', 'dot', 'json')"
        )
    return _SUFFIXES[suffix]


def write_export(
    dag: ContextDAG, path: str | os.PathLike[str], *, format: ExportFormat | None = None
) -> Path:
    """Write the DAG to exactly `path` in `format` (default: from the suffix); returns it."""
    chosen = export_format(path, format)
    target = Path(path).expanduser()
    if not target.parent.is_dir():
        raise UsageError(f"folder {str(target.parent)!r} does not exist; create it first")
    target.write_text(export_text(dag, chosen), encoding="utf-8")
    return target


def export_text(dag: ContextDAG, format: ExportFormat) -> str:
    """The DAG in `format` as the text write_export writes (secrets masked)."""
    writers: dict[str, Callable[[ContextDAG], str]] = {
        "graphml": to_graphml,
        "mermaid": to_mermaid,
        "dot": to_dot,
        "json": to_json,
    }
    text = writers[export_format("-", format)](dag)
    if format != "json":  # to_json is scrubbed already, and must stay valid JSON
        text = replace_surrogates(_secrets.scrub(text, patterns=False))
    return text
