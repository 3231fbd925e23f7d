"""What one llm call saw: its rebuilt context, what was hidden from it and why, and the
diff to the previous call of the same function.

The Python side of DESIGN.md §9 "exactly what it saw"; the DAG view shows the same in
the browser (_script.py). Start at CallView.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Literal

from openprogram.core.dag import ContextDAG, Node
from openprogram.core.node import registered_view
from openprogram.display._hiding import (
    HiddenCode,
    call_of,
    earlier_hidden,
    label,
    reason_text,
    template,
)
from openprogram.echo import echo
from openprogram.errors import UsageError
from openprogram.render.render import RenderedContext, seen_by

__all__ = [
    "CallView",
    "DiffLine",
    "HiddenCode",
    "HiddenGroup",
    "HiddenNode",
    "context_diff",
    "group_hidden",
    "hidden_nodes",
    "label",
    "previous_call",
    "rebuild_context",
    "resolve_node",
]

rebuild_context = seen_by
"""What llm node `node` saw, exactly (hash-checked): openprogram.render.render.seen_by."""


def _llm_node(dag: ContextDAG, node: Node | str) -> Node:
    found = dag.node(node) if isinstance(node, str) else node
    if found.kind != "llm":
        raise UsageError(
            f"node {found.id!r} is a {found.kind} node ({found.name}); pass an llm node, e.g. "
            f"dag.find(name={found.name!r}, kind='llm')[0]"
        )
    return found


@dataclass(frozen=True)
class HiddenNode:
    """A node that existed when a call was made but was not in its context, and why.

    `frame` is the call the reason names, if any: the finished call whose expose hid
    the node, or the caller's call the node's concurrent subtree started after. `code`
    names the rule (`inside`, `callers`, …) for programs; `reason` says it for people.
    """

    node: Node
    reason: str
    frame: Node | None = None
    code: HiddenCode = field(kw_only=True)
    """Which rule, as a stable code: see openprogram.display._hiding.HiddenCode."""


@dataclass(frozen=True)
class HiddenGroup:
    """Hidden nodes sharing a rule; `rule` names the frames' function, not each call
    (`inside gui_step (expose='io')`), and `frames` lists those calls."""

    rule: str
    frames: list[Node]
    nodes: list[Node]

    def counted(self) -> str:
        """How many nodes, in how many calls: `3 nodes in 2 calls`."""
        nodes = f"{len(self.nodes)} node{'s' if len(self.nodes) != 1 else ''}"
        if not self.frames:
            return nodes
        return f"{nodes} in {len(self.frames)} call{'s' if len(self.frames) != 1 else ''}"

    def names(self, dag: ContextDAG, limit: int = 12) -> str:
        """The labels of the calls (else the nodes), the first `limit` and how many more."""
        shown = self.frames or self.nodes
        names = ", ".join(label(dag, n) for n in shown[:limit])
        return names + (f" and {len(shown) - limit} more" if len(shown) > limit else "")


def group_hidden(dag: ContextDAG, hidden: list[HiddenNode]) -> list[HiddenGroup]:
    """Hidden nodes grouped by rule, in order of each group's first node."""
    groups: dict[str, HiddenGroup] = {}
    frames: dict[str, set[str]] = {}
    for entry in hidden:
        rule = template(dag, entry.reason, entry.frame)
        if entry.frame is not None:
            rule = rule.replace("{call}", entry.frame.name)
        group = groups.setdefault(rule, HiddenGroup(rule, [], []))
        group.nodes.append(entry.node)
        seen = frames.setdefault(rule, set())
        if entry.frame is not None and entry.frame.id not in seen:
            seen.add(entry.frame.id)
            group.frames.append(entry.frame)
    return list(groups.values())


def hidden_nodes(dag: ContextDAG, node: Node | str) -> list[HiddenNode]:
    """Nodes older than llm node `node` that it did not read, each with the rule that
    hid it: another branch, a frame's expose, the node's own expose, concurrency, or the
    render_range window. In seq order. The DAG views show the same, computed by the same
    rules (openprogram.display._hiding) into their payload."""
    call = call_of(dag, _llm_node(dag, node))
    return [
        HiddenNode(candidate, reason_text(dag, code, candidate, frame, call), frame, code=code)
        for candidate, code, frame in earlier_hidden(dag, call)
    ]


def previous_call(dag: ContextDAG, node: Node | str) -> Node | None:
    """The llm node before `node` made by the same function (same name), if any."""
    llm_node = _llm_node(dag, node)
    earlier = None
    for candidate in dag.find(name=llm_node.name, kind="llm"):
        if candidate.seq >= llm_node.seq:
            break
        earlier = candidate
    return earlier


@dataclass(frozen=True)
class DiffLine:
    """One line of a context diff: kept (" "), removed ("-") or added ("+")."""

    op: Literal[" ", "-", "+"]
    text: str


def context_diff(before: RenderedContext, after: RenderedContext) -> list[DiffLine]:
    """Line diff of two renders' text (history lines plus the content)."""
    old, new = _diff_lines(before), _diff_lines(after)
    lines: list[DiffLine] = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, a0, a1, b0, b1 in matcher.get_opcodes():
        if tag == "equal":
            lines.extend(DiffLine(" ", text) for text in old[a0:a1])
            continue
        lines.extend(DiffLine("-", text) for text in old[a0:a1])
        lines.extend(DiffLine("+", text) for text in new[b0:b1])
    return lines


def _diff_lines(rendered: RenderedContext) -> list[str]:
    """The render as diffable lines: each history line, then `content:` and the content's
    text split at its line breaks (images as `<image sha256:…>`, so compared by hash)."""
    from openprogram.display._payload import _parts_text

    lines = rendered.text().splitlines() if rendered.nodes else []
    if rendered.content is not None:
        lines.append("content:")
        lines.extend("  " + line for line in _parts_text(rendered.content).splitlines())
    return lines


class CallView:
    """Everything about one llm call: what it saw, what it replied, what was hidden, and
    what changed since the previous call of the same function. Renders in a notebook.

    `CallView(dag, dag.find(name="review", kind="llm")[0])`, then `.rendered.messages`,
    `.verified`, `.hidden` (or `.hidden_groups()`), `.previous` and `.diff`.
    """

    def __init__(self, dag: ContextDAG, node: Node | str) -> None:
        self.dag = dag
        self.node = _llm_node(dag, node)
        self.rendered = rebuild_context(dag, self.node)
        self.hidden = hidden_nodes(dag, self.node)
        self.previous = previous_call(dag, self.node)
        self._diff: list[DiffLine] | None = None

    @property
    def verified(self) -> bool | None:
        """Whether the rebuilt messages hash equals the recorded one (None: none recorded)."""
        if self.node.messages_hash is None:
            return None
        return self.rendered.messages_hash == self.node.messages_hash

    @property
    def diff(self) -> list[DiffLine]:
        """What changed since the previous call of the same function (empty if none)."""
        if self._diff is None:
            if self.previous is None:
                self._diff = []
            else:
                self._diff = context_diff(rebuild_context(self.dag, self.previous), self.rendered)
        return self._diff

    def hidden_groups(self) -> list[HiddenGroup]:
        """The hidden nodes grouped by rule (see group_hidden)."""
        return group_hidden(self.dag, self.hidden)

    def hidden_by_reason(self) -> dict[str, list[Node]]:
        """The hidden nodes grouped by reason, groups in order of their first node."""
        groups: dict[str, list[Node]] = {}
        for entry in self.hidden:
            groups.setdefault(entry.reason, []).append(entry.node)
        return groups

    def __repr__(self) -> str:
        return (
            f"CallView({label(self.dag, self.node)}: read {len(self.node.reads)} nodes, "
            f"{len(self.hidden)} hidden)"
        )

    def _repr_html_(self) -> str:
        return registered_view("call")(self)  # display/html.py's call_html, registered there


def resolve_node(dag: ContextDAG, reference: str) -> Node:
    """A node by id, unique id prefix, `name#k` (k-th call of a function), `llm:name#k`
    (its k-th model exchange) or `user#k`; UsageError saying how to name one otherwise."""
    if reference in dag:
        return dag.node(reference)
    kind = "code"
    text = reference
    if ":" in text:
        kind, text = text.split(":", 1)
    if "#" in text:
        name, _, number = text.rpartition("#")
        if name == "user":
            kind = "user"
        if number.isdigit() and kind in ("code", "llm", "user"):
            matches = dag.find(name=name, kind=kind)  # type: ignore[arg-type]
            k = int(number)
            if 1 <= k <= len(matches):
                return matches[k - 1]
            if not matches:
                names = sorted({n.name for n in dag.nodes if n.kind == kind})
                known = ", ".join(repr(n) for n in names[:10]) + (", …" if len(names) > 10 else "")
                here = f"{kind} nodes here are named {known}" if names else f"no {kind} nodes here"
                raise UsageError(f"{echo(reference)}: no {kind} node is named {echo(name)}; {here}")
            raise UsageError(
                f"{echo(reference)}: there are {len(matches)} {kind} nodes named {echo(name)}; "
                f"use #1 to #{len(matches)}"
            )
    prefixed = [n for n in dag.nodes if n.id.startswith(reference)]
    if len(prefixed) == 1:
        return prefixed[0]
    if prefixed:
        raise UsageError(
            f"{echo(reference)} matches {len(prefixed)} node ids; give more characters"
        )
    raise UsageError(
        f"no node {echo(reference)}: give a node id (or a unique prefix), 'name#k' for the k-th "
        "call of a function, 'llm:name#k' for its k-th model exchange, or 'user#k'"
    )
