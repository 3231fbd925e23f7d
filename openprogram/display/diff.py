"""Differences between two runs, or two calls: what `openprogram sessions diff` prints.

Owns the line form of a call tree for comparing (name #k, kind, status, input, output)
and the unified diffs over it; for two llm exchanges, what each saw and replied. Reads
DAGs, never writes them. Start at session_diff().
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from openprogram.core._tree import walk
from openprogram.core.dag import ContextDAG, Node
from openprogram.echo import cut
from openprogram.render.render import seen_by

__all__ = ["node_diff", "session_diff"]

_VALUE_CHARS = 160


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return cut(" ".join(text.split()), _VALUE_CHARS)


def _line(dag: ContextDAG, node: Node, level: int) -> str:
    """One node as the diff compares it: where it is, what went in and came out."""
    what = f"{'  ' * level}{node.name} #{dag.ordinal(node)}" + (
        " (llm)" if node.kind == "llm" else ""
    )
    parts = [what, node.status]
    if node.kind == "user":
        parts.append(_value(node.input))
    elif node.kind == "code":
        parts.append(f"input={_value(node.input)}")
    calls = _calls(node)
    if calls:
        parts.append(f"calls {calls}")
    if node.status == "completed" and node.output not in (None, ""):
        parts.append(f"output={_value(node.output)}")
    elif node.error:
        parts.append(f"error={_value(node.error)}")
    return "  ".join(parts)


def _calls(node: Node) -> str:
    """The tool calls an llm node asked for, as `add({"a": 2}), ...` (cut)."""
    calls = node.meta.get("tool_calls") or []
    shown = [f"{c.get('name')}({_value(c.get('arguments'))})" for c in calls if isinstance(c, dict)]
    return cut(", ".join(shown), _VALUE_CHARS)


def _tree(dag: ContextDAG, root: Node | None = None) -> list[str]:
    if root is None:
        return [_line(dag, node, level) for node, level in walk(dag)]
    lines = [_line(dag, root, 0)]
    stack = [(child, 1) for child in reversed(dag.children(root.id))]
    while stack:
        node, level = stack.pop()
        lines.append(_line(dag, node, level))
        stack.extend((child, level + 1) for child in reversed(dag.children(node.id)))
    return lines


def _unified(before: list[str], after: list[str], labels: tuple[str, str]) -> list[str]:
    return list(
        difflib.unified_diff(before, after, fromfile=labels[0], tofile=labels[1], lineterm="")
    )


def session_diff(
    a: ContextDAG, b: ContextDAG, *, labels: tuple[str, str] = ("a", "b")
) -> list[str]:
    """A unified diff of two runs' call trees, one line per node (name #k, status, input,
    output or error; values cut to 160 characters); [] when they are alike."""
    return _unified(_tree(a), _tree(b), labels)


def _exchange(dag: ContextDAG, node: Node) -> list[str]:
    """An llm exchange as compared: every line it saw, then its reply."""
    seen = seen_by(dag, node)
    lines = [f"system: {line}" for line in seen.system.splitlines()] if seen.system else []
    lines += seen.text().splitlines()
    if node.input:
        content = node.input if isinstance(node.input, str) else _value(node.input)
        lines += [f"content: {line}" for line in str(content).splitlines()]
    lines += [f"reply: {line}" for line in str(node.output or "").splitlines()]
    if _calls(node):
        lines.append(f"calls: {_calls(node)}")
    if node.error:
        lines.append(f"error: {node.error}")
    return lines


def node_diff(
    dag_a: ContextDAG,
    a: Node,
    dag_b: ContextDAG,
    b: Node,
    *,
    labels: tuple[str, str] = ("a", "b"),
) -> list[str]:
    """A unified diff of two calls: for two llm exchanges, what each saw (history,
    content) and replied, line by line; otherwise their subtrees as session_diff shows
    them. [] when they are alike."""
    if a.kind == "llm" and b.kind == "llm":
        return _unified(_exchange(dag_a, a), _exchange(dag_b, b), labels)
    return _unified(_tree(dag_a, a), _tree(dag_b, b), labels)
