"""The plain-text call tree of a DAG: what `print(dag)`, `dag.tree()` and the CLI show.

Owns the line format (status mark, `name #k`, duration, tokens, cost, badges) and the
depth-first walk. No colours and no I/O: the CLI styles these lines. Start at tree_lines().
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol, TypeVar

from openprogram.core.usage import Usage

__all__ = ["MARKS", "node_line", "settled_text", "tree_lines", "walk"]

MARKS = {
    "completed": "✓",
    "error": "✗",
    "running": "…",
    "cancelled": "⊘",
    "stopped": "■",
    "waiting": "⏸",
    "unknown": "?",
}
"""One character per node status, as the tree shows it."""


class Node(Protocol):
    """What a tree line shows of a node (dag.py's Node, a layer above)."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def expose(self) -> str: ...
    @property
    def status(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def usage(self) -> Usage | None: ...
    @property
    def duration_s(self) -> float | None: ...
    @property
    def down_s(self) -> float: ...
    @property
    def input(self) -> object: ...
    @property
    def meta(self) -> dict[str, Any]: ...
    @property
    def output(self) -> object: ...


N = TypeVar("N", bound=Node)


class ContextDAG(Protocol[N]):
    """What the tree walks of a ContextDAG (whose nodes are N)."""

    def __len__(self) -> int: ...
    def children(self, node_id: str | None) -> Sequence[N]: ...
    def ordinal(self, node: N | str) -> int: ...


def walk(dag: ContextDAG[N], depth: int | None = None) -> Iterator[tuple[N, int]]:
    """(node, level) depth first in seq order; level 0 is top level."""
    stack = [(node, 0) for node in reversed(dag.children(None))]
    while stack:
        node, level = stack.pop()
        yield node, level
        if depth is None or level + 1 < depth:
            stack.extend((child, level + 1) for child in reversed(dag.children(node.id)))


def node_line(dag: ContextDAG[N], node: N) -> tuple[str, str, list[str]]:
    """(status mark, `name #k`, the facts after it) for one node."""
    name = f"{node.name} #{dag.ordinal(node)}" + (" (llm)" if node.kind == "llm" else "")
    facts = []
    if node.kind == "code" and node.expose != "io":
        facts.append(f"[{node.expose}]")
    if node.duration_s is not None and node.kind != "user":
        facts.append(_duration(node.duration_s))
    if node.usage is not None:
        usage = node.usage
        facts.append(f"{usage.input_tokens}→{usage.output_tokens} tok ${usage.cost_usd:.4f}")
    facts += _badges(node)
    asked = node.input.get("question") if isinstance(node.input, dict) else None
    if node.status == "waiting" and node.meta.get("ask") and isinstance(asked, str):
        text = " ".join(asked.split())
        facts.append(f"waiting for an answer ({node.id}): {text[:100]}")
    elif node.status in ("error", "cancelled", "stopped", "unknown") and node.error:
        error = " ".join(node.error.split())
        facts.append(error[:100] + ("…" if len(error) > 100 else ""))
    return MARKS.get(node.status, "?"), name, facts


def _badges(node: Node) -> list[str]:
    """What the tree marks besides status: tool calls asked and run, resumed calls."""
    badges = []
    asked = node.meta.get("tool_calls")
    if node.kind == "llm" and isinstance(asked, list) and asked:
        names = ", ".join(str(c.get("name")) for c in asked[:5] if isinstance(c, dict))
        badges.append(f"→ tools: {names}" + (f" (+{len(asked) - 5})" if len(asked) > 5 else ""))
    if node.meta.get("tool_call_id"):
        badges.append("[tool call]")
    settled = settled_text(node.meta, node.output if node.status == "completed" else None)
    if settled:
        badges.append(f"[{settled}]")
    resumed = node.meta.get("resumed")
    if resumed:
        again = f"; ran again: {node.meta['rerun']}" if node.meta.get("rerun") else ""
        times = f" ×{resumed}" if isinstance(resumed, int) and resumed > 1 else ""
        down = f" after {_duration(node.down_s)} down" if node.down_s else ""
        badges.append(f"[resumed{times}{down}{again[:80]}]")
    return badges


def settled_text(meta: dict[str, Any], output: object = None) -> str:
    """How a settled `once` call was settled, by whom and when ("settled to run again by
    alice at 2026-12-07 02:30:31 UTC", "settled with "ch-0" by …": `output`, what it
    returns), from its meta; "" when it never was."""
    entries = meta.get("settlements")
    last = entries[-1] if isinstance(entries, list) and entries else None
    if not isinstance(last, dict):
        if meta.get("settled") is None:
            return ""
        last = {"how": meta.get("settled"), "by": meta.get("settled_by"),
                "at": meta.get("settled_at")}  # fmt: skip
    if last.get("how") == "rerun":
        how = "to run again"
    else:
        text = json.dumps(output, ensure_ascii=False, default=str)
        how = "with " + (text if len(text) <= 60 else text[:60] + "…")
    by = last.get("by")
    who = f" by {str(by)[:80]}" if by else ""
    at = last.get("at")
    when = ""
    if isinstance(at, (int, float)) and math.isfinite(at):
        when = time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    return f"settled {how}{who}{when}"


def tree_lines(
    dag: ContextDAG[N], *, depth: int | None = None, limit: int | None = None
) -> list[str]:
    """The tree as lines, two spaces of indent per level; `limit` caps the node count
    (a last line says how many were left out)."""
    lines = []
    for shown, (node, level) in enumerate(walk(dag, depth)):
        if limit is not None and shown >= limit:
            lines.append(f"… {len(dag) - shown:,} more nodes")
            break
        mark, name, facts = node_line(dag, node)
        lines.append("  ".join(["  " * level + mark, name, *facts]))
    return lines


def _duration(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
