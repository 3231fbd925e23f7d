"""Compaction of one render: what a token budget keeps (DESIGN.md §4 "Compaction").

Owns fit(): given the visible nodes render.py found, which of the oldest ones the newest
summary stands for, which are dropped, and what the history then costs. Pure: it reads
the DAG and never writes it; summaries are made before a render by the runtime
(compaction.py), and only used here. Start at fit().
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from openprogram.core.dag import ContextDAG, Node
from openprogram.render._messages import Walk, Writer, content_parts, reply_text
from openprogram.render._tokens import Counter


class StackWalk(Walk, Protocol):
    """A walk from a call stack (render.py's RenderWalk): the frame is its last node."""

    stack: list[Node]


_PLACEHOLDER = 16  # "[image omitted: <image sha256:… WxH>]"

_costs: weakref.WeakKeyDictionary[ContextDAG, dict[tuple[str, str], _Cost]]
_costs = weakref.WeakKeyDictionary()


@dataclass
class Fitted:
    """A history fitted to a budget: `nodes` in the order they show (the summary where
    the first node it stands for was), and what was left out. A render that looked at
    only the newest part of a long history (`implicit`) leaves out every older visible
    node but the stack's call lines: the summary stands for them, or they are dropped."""

    nodes: list[Node]
    budget: int
    tokens: int  # the fitted history's count
    summary: Node | None = None
    covered: list[Node] = field(default_factory=list)  # shown as the summary
    dropped: list[Node] = field(default_factory=list)  # no summary covers them
    compactable: list[Node] = field(default_factory=list)  # all but the kept and the stack
    spent: bool = False  # the nodes looked at did not fit the budget as they were
    implicit: bool = False  # visible nodes older than those looked at are left out too
    writer: Writer | None = None
    protected: set[str] = field(default_factory=set)  # the stack's nodes: never left out
    everything: Callable[[], list[Node]] | None = None  # the whole history, when asked
    looked_at: set[str] = field(default_factory=set)  # ids of the nodes fit() was given
    _older: list[Node] | None = None

    @property
    def needs_summary(self) -> bool:
        """Whether history no summary covers is dropped: what the runtime summarises."""
        return bool(self.dropped) or (self.implicit and self.summary is None)

    def older(self) -> list[Node]:
        """The visible nodes older than those looked at (none unless `implicit`): listed
        only when asked, by a walk of the whole history."""
        if self._older is None:
            self._older = []
            if self.implicit and self.everything is not None:
                first = min((n.seq for n in self.nodes if n.id not in self.protected), default=0)
                self._older = [
                    n
                    for n in self.everything()
                    if n.id not in self.protected
                    and n.id not in self.looked_at
                    and (n.seq < first or not first)
                ]
        return self._older

    def report(self) -> list[dict[str, Any]]:
        """One "compacted" entry per node left out, oldest first."""
        into: dict[str, str] = {n.id: self.summary.id for n in self.covered} if self.summary else {}
        into.update((n.id, "dropped") for n in self.dropped)
        for node in self.older():
            into[node.id] = "dropped" if self._covering(node) is None else self.summary.id  # type: ignore[union-attr]
        order = {n.id: n.seq for n in (*self.covered, *self.dropped, *self.older())}
        entries = []
        for node_id in sorted(into, key=order.__getitem__):
            target = into[node_id]
            if target == "dropped":
                reason = (
                    f"dropped: the history did not fit tokens={self.budget} and no summary "
                    "covers it"
                )
            else:
                first, last = self.summary.meta["covers"]  # type: ignore[union-attr]
                reason = f"replaced by summary {target} of seq {first}-{last}"
            entries.append(
                {"kind": "compacted", "node_id": node_id, "into": target, "reason": reason}
            )
        return entries

    def _covering(self, node: Node) -> Node | None:
        summary = self.summary
        return summary if summary is not None and _covers(summary, node) else None

    def lines(self, nodes: Sequence[Node]) -> list[str]:
        """The history lines of `nodes` (what a summary of them is made from)."""
        assert self.writer is not None
        reports, self.writer.reports = self.writer.reports, []
        try:
            return [self.writer.line(node) for node in nodes]
        finally:
            self.writer.reports = reports

    def uncovered(self) -> list[Node]:
        """The left-out and compactable nodes no summary covers, oldest first: what a
        new summary must take in (all but the newest `keep`)."""
        covered = {n.id for n in self.covered}
        looked = [n for n in self.compactable if n.id not in covered]
        if self.implicit and self.summary is None:
            return [*self.older(), *looked]
        return looked


def fit(
    walk: StackWalk,
    writer: Writer,
    nodes: Sequence[Node],
    protected: set[str],
    *,
    budget: int,
    keep: int,
    count: Counter,
    max_images: int | None,
    usable: Callable[[Node], bool],
    whole: bool = True,
    everything: Callable[[], list[Node]] | None = None,
) -> Fitted:
    """Fit `nodes` (visible, seq order; the whole history when `whole`, else its newest
    part) into `budget` tokens: the stack's call lines, the newest round of a tool loop
    (of `protected`'s other nodes, the loop's turns: its older rounds are history like
    any other) and the newest `keep` others always show; of the rest, those the newest
    usable summary covers are shown as it, and then the oldest are dropped until the
    history fits. A tool call and its results go together. `usable(summary)`: whether
    this render may show that summary (its branch, its moment). `everything()` lists the
    whole history, for a report of what was left out of a partial one."""
    dag = walk.dag
    protected = _newest_round(walk, nodes, protected)
    costs = [_cost(dag, writer, node, count) for node in nodes]
    images = _image_costs(costs, max_images)
    cost_of = {
        node.id: text + image for node, (text, _), image in zip(nodes, costs, images, strict=True)
    }
    total = sum(cost_of.values())
    units = _units([n for n in nodes if n.id not in protected])
    kept_nodes = 0
    split = len(units)
    while split > 0 and kept_nodes < keep:
        split -= 1
        kept_nodes += len(units[split])
    compactable_units = units[:split]
    fitted = Fitted(
        list(nodes),
        budget,
        total,
        writer=writer,
        spent=total > budget,
        compactable=[n for unit in compactable_units for n in unit],
        protected=protected,
        everything=everything,
        looked_at={n.id for n in nodes},
    )
    summary = _summary(walk, usable)
    reached = (
        summary is not None
        and bool(compactable_units)
        and compactable_units[0][0].seq <= summary.meta["covers"][1]
    )
    if not whole and (fitted.spent or reached):
        fitted.implicit = True  # older nodes are not looked at: the summary or nothing
    if not fitted.spent and not fitted.implicit:
        return fitted
    covered: set[str] = set()
    if summary is not None:
        for unit in compactable_units:
            if all(_covers(summary, n) for n in unit):
                covered.update(n.id for n in unit)
    use_summary = summary is not None and (bool(covered) or fitted.implicit)
    if use_summary:
        total += _cost(dag, writer, summary, count)[0] - sum(cost_of[i] for i in covered)  # type: ignore[arg-type]
    dropped: set[str] = set()
    for unit in compactable_units:
        if total <= budget:
            break
        if unit[0].id in covered:
            continue
        dropped.update(n.id for n in unit)
        total -= sum(cost_of[n.id] for n in unit)
    shown: list[Node] = []
    placed = not use_summary
    for node in nodes:
        if not placed and node.id not in protected:
            shown.append(summary)  # type: ignore[arg-type]  # use_summary: there is one
            placed = True
        if node.id not in covered and node.id not in dropped:
            shown.append(node)
    if not placed:
        shown.append(summary)  # type: ignore[arg-type]
    fitted.nodes, fitted.tokens = shown, total
    fitted.summary = summary if use_summary else None
    fitted.covered = [n for n in nodes if n.id in covered]
    fitted.dropped = [n for n in nodes if n.id in dropped]
    return fitted


def _newest_round(walk: StackWalk, nodes: Sequence[Node], protected: set[str]) -> set[str]:
    """`protected` with a tool loop's turns cut to its newest round (the exchange that
    asked for tools and their results), so a budget holds inside one llm() call too."""
    stack = {n.id for n in walk.stack}
    loop = [n for n in nodes if n.id in protected and n.id not in stack]
    if len(loop) <= 1:
        return protected
    rounds = _units(loop)
    return protected - {n.id for unit in rounds[:-1] for n in unit}


def _units(nodes: list[Node]) -> list[list[Node]]:
    """The nodes in seq order, a tool call's results grouped with the llm node that asked."""
    units: list[list[Node]] = []
    unit_of: dict[str, list[Node]] = {}
    for node in nodes:
        asker = node.meta.get("asked_by") if "tool_call_id" in node.meta else None
        if asker is not None and asker in unit_of:
            unit_of[asker].append(node)
            unit_of[node.id] = unit_of[asker]
            continue
        unit = [node]
        units.append(unit)
        unit_of[node.id] = unit
    return units


def _summary(walk: StackWalk, usable: Callable[[Node], bool]) -> Node | None:
    """The newest summary this render may use: one made for its frame (the frame a
    summary's code node was called in), or for an earlier call of the same function in
    the same caller when it covers only what came before that call, which both calls
    see alike. Never a summary another frame made of its own history: under
    `asyncio.gather(a(), b())` a's summary is a's alone."""
    dag = walk.dag
    frame = walk.stack[-1] if walk.stack else None
    for summary in reversed(dag.summaries):
        if _made_for(dag, summary, frame) and usable(summary):
            return summary
    return None


def _made_for(dag: ContextDAG, summary: Node, frame: Node | None) -> bool:
    """Whether `summary` may stand in a render for `frame` (None: outside any call)."""
    if summary.parent == (frame.id if frame is not None else None):
        return True
    made_for = dag.get(summary.parent) if summary.parent is not None else None
    return (
        frame is not None
        and made_for is not None
        and made_for.parent == frame.parent
        and made_for.name == frame.name
        and summary.meta["covers"][1] < made_for.seq
    )


def _covers(summary: Node, node: Node) -> bool:
    """Whether `summary` stands for `node`: within its seqs, and ended before it was made
    (a call still running then, under gather, was summarised without its result)."""
    first, last = summary.meta["covers"]
    return first <= node.seq <= last and node.end_seq is not None and node.end_seq < summary.seq


_Cost = tuple[int, tuple[tuple[int, int], ...]]


def _cost(dag: ContextDAG, writer: Writer, node: Node, count: Counter) -> _Cost:
    """(text tokens, each image's (full, placeholder) cost) of one node's turns; cached
    once the node is final."""
    final = node.status != "running" and writer.walk.done(node) and node.id not in writer.stack_ids
    key = (node.id, count.model)
    cache = _costs.setdefault(dag, {})
    if final and key in cache:
        return cache[key]
    reports, writer.reports = writer.reports, []
    try:
        images: list[tuple[int, int]] = []
        if node.kind == "llm":
            text = 0
            for part in content_parts(node.input, None, None):
                if part.get("type") == "image":
                    ref = part["image"]
                    described = count.text(str(part.get("description") or ""))
                    images.append((count.image(ref.width, ref.height), _PLACEHOLDER + described))
                else:
                    text += count.text(str(part.get("text", "")))
            text += count.text(reply_text(node)) + 2 * count.message()
        else:
            text = count.text(writer.line(node)) + count.message()
    finally:
        writer.reports = reports
    result = (text, tuple(images))
    if final:
        cache[key] = result
    return result


def _image_costs(costs: list[_Cost], max_images: int | None) -> list[int]:
    """Each node's image cost: the newest `max_images` images in full, the rest as the
    text they become."""
    seen = 0
    result = [0] * len(costs)
    for index in range(len(costs) - 1, -1, -1):
        for full, placeholder in costs[index][1]:
            seen += 1
            result[index] += full if max_images is None or seen <= max_images else placeholder
    return result
