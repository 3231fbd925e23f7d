"""Run: one recorded run of one case, as a scorer sees it.

Owns the questions a scorer asks of a run's DAG: its output and error, its calls, what a
sub-call's model exchange saw (`saw`), its tool calls, cost and latency. Reads the DAG,
never writes it. Start at Run.saw.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from openprogram.core.dag import ContextDAG, Node
from openprogram.core.usage import Usage, frame_usage
from openprogram.errors import UsageError
from openprogram.render.render import RenderedContext, seen_by

__all__ = ["Run", "ToolUse"]


@dataclass(frozen=True)
class ToolUse:
    """One tool call a model asked for in a run: the tool's `name`, the `arguments` it
    ran with, its `output` (or `error`), and the function whose llm() call asked."""

    name: str
    arguments: dict[str, Any]
    output: Any
    error: str | None
    caller: str | None
    node: Node


@dataclass
class Run:
    """One recorded run of a case: `output` or `error`, and the DAG of its session.

    node: the code node of the call being scored (the case's call; for a per-function
        scorer, the call of that function); None when the function is not an agentic
        function: then the run is every node of the session from seq `since` to seq
        `until`. session: the session's id (None when the run was not recorded into a
        store). repeat: which repetition (0-based).
    """

    dag: ContextDAG
    node: Node | None
    output: Any = None
    error: str | None = None
    duration_s: float = 0.0
    session: str | None = None
    repeat: int = 0
    since: int = -1
    until: int | None = None
    _seen: dict[str, RenderedContext] = field(default_factory=dict, repr=False)

    # -- calls ---------------------------------------------------------------------------
    def _inside(self) -> list[Node]:
        """The nodes of the scored call's subtree (the whole DAG when none is known)."""
        if self.node is None:
            return [
                n
                for n in self.dag.nodes
                if n.seq > self.since and (self.until is None or n.seq <= self.until)
            ]
        found, pending = [], [self.node.id]
        while pending:
            for child in self.dag.children(pending.pop()):
                found.append(child)
                pending.append(child.id)
        found.sort(key=lambda n: n.seq)
        return found

    def calls(self, name: str | None = None) -> list[Node]:
        """The code nodes (calls) inside the scored call, in order; only `name`'s when given."""
        return [n for n in self._inside() if n.kind == "code" and (name is None or n.name == name)]

    def exchanges(self, function: str | None = None) -> list[Node]:
        """The llm nodes inside the scored call; only those asked by `function` when given."""
        nodes = self._inside()
        if self.node is not None and function == self.node.name:
            nodes = [n for n in nodes if n.parent == self.node.id]
        return [n for n in nodes if n.kind == "llm" and (function is None or n.name == function)]

    def seen(self, function: str | None = None) -> list[RenderedContext]:
        """What each model exchange of `function` saw (all exchanges when None), rebuilt
        exactly from the record: render_context's messages and visible nodes."""
        found = []
        for node in self.exchanges(function):
            rendered = self._seen.get(node.id)
            if rendered is None:
                rendered = self._seen[node.id] = seen_by(self.dag, node)
            found.append(rendered)
        return found

    def saw(
        self,
        function: str | None = None,
        *,
        contains: str | None = None,
        matches: str | None = None,
    ) -> bool:
        """Whether any model exchange of `function` (any exchange when None) saw `contains`
        (a substring) or `matches` (a regular expression) in its messages — the system
        prompt, the rendered history and its own content. Checks expose/render_range:
        e.g. `not run.saw("review", contains="card number")`.
        Raises UsageError when neither or both are given."""
        if (contains is None) == (matches is None):
            raise UsageError("run.saw(...) takes contains='text' or matches=r'regex' (one)")
        pattern = re.compile(matches) if matches is not None else None
        for rendered in self.seen(function):
            text = messages_text(rendered.messages)
            if contains is not None and contains in text:
                return True
            if pattern is not None and pattern.search(text):
                return True
        return False

    def tool_calls(self, name: str | None = None) -> list[ToolUse]:
        """The tool calls inside the scored call (tools a model asked for), in order."""
        uses = []
        for node in self.calls(name):
            if "tool_call_id" not in node.meta:
                continue
            caller = self.dag.get(node.parent)
            uses.append(
                ToolUse(
                    name=node.name,
                    arguments=dict(node.input or {}),
                    output=node.output,
                    error=node.error,
                    caller=None if caller is None else caller.name,
                    node=node,
                )
            )
        return uses

    # -- cost ----------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        """Tokens, cost and model latency of the scored call's exchanges (a judge's own
        calls, made after it, are not counted)."""
        if self.node is not None:
            return frame_usage(self.dag, self.node.id)
        total = Usage()
        for node in self._inside():
            if node.kind == "llm" and node.usage is not None:
                total = total + node.usage
        return total

    @property
    def cost(self) -> float:
        """USD spent by the scored call's model exchanges."""
        return self.usage.cost_usd

    @property
    def latency_s(self) -> float:
        """Seconds the scored call took (its recorded duration, else the measured one)."""
        if self.node is not None and self.node.duration_s is not None:
            return self.node.duration_s
        return self.duration_s


def messages_text(messages: list[dict[str, Any]]) -> str:
    """Chat messages as one searchable text: every text part, tool call and result."""
    parts: list[str] = []
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    parts.append(part["text"])
        for call in message.get("tool_calls") or ():
            parts.append(json.dumps(call, ensure_ascii=False, default=str))
    return "\n".join(parts)
