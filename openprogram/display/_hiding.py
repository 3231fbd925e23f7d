"""Why a node was hidden from an llm call: the one implementation of those rules.

Owns the reason of each earlier node an llm call did not read (code, text and the call
it names), for one call (calls.hidden_nodes) or for every call of a DAG at once, each as
a change against the previous call of the same function (the views' payload, whose
script only draws the result). Start at why() and CallHiding.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from openprogram.core.dag import ContextDAG, Node, RenderRange

__all__ = [
    "Call",
    "CallHiding",
    "HiddenCode",
    "call_of",
    "earlier_hidden",
    "label",
    "reason_text",
    "template",
    "why",
]

HiddenCode = Literal[
    "branch",
    "call_line",
    "inside",
    "inside_llm",
    "own_line",
    "concurrent",
    "callers",
    "subcalls",
    "compacted",
    "superseded",
]
"""Which rule hid a node: another branch (`branch`); a caller whose expose hides its line
(`call_line`); inside a finished call that reveals nothing or only its llm exchanges
(`inside`, `inside_llm`); a call whose own expose hides its line (`own_line`); a sibling
subtree started after this call's branch of the stack (`concurrent`); cut by the frame's
render_range window (`callers`, `subcalls`); left out by its token budget, shown as the
summary the reason names or dropped (`compacted`, the nodes the render's report lists);
an older summary the newest one stands in for (`superseded`)."""


def label(dag: ContextDAG, node: Node) -> str:
    """`name #k`, with the kind for llm and user nodes: how views name a node."""
    suffix = " (llm)" if node.kind == "llm" else ""
    return f"{node.name} #{dag.ordinal(node)}{suffix}"


@dataclass(frozen=True)
class Call:
    """What the rules need to know about one llm call: its stack (outermost first;
    `stack_ids` gives each one's depth), branch, the branch's newest top-level node
    before it (or the node a fresh branch was forked at, as the render takes it), and
    its frame's window."""

    node: Node
    stack: list[Node]
    stack_ids: dict[str, int]
    branch: str
    head: Node | None
    window: RenderRange | None
    reads: frozenset[str]


def call_of(dag: ContextDAG, llm_node: Node) -> Call:
    """The rules' view of llm node `llm_node`."""
    frame = dag.get(llm_node.parent)
    stack = ([frame, *dag.ancestors(frame)] if frame is not None else [])[::-1]
    branch = stack[0].branch if stack else llm_node.branch
    return Call(
        node=llm_node,
        stack=stack,
        stack_ids={n.id: depth for depth, n in enumerate(stack)},
        branch=branch,
        head=dag.head(branch, before=llm_node.seq) or dag.fork_point(branch),
        window=frame.render_range if frame is not None and frame.render_range else None,
        reads=frozenset(llm_node.reads),
    )


def why(dag: ContextDAG, node: Node, call: Call) -> tuple[HiddenCode, Node | None]:
    """The rule that hid `node` (older than the call, not read by it) and the call the
    reason names: the finished call whose expose hid it, or for `concurrent` the stack's
    call the node's subtree started after."""
    stack, head = call.stack, call.head
    ancestors = dag.ancestors(node)  # innermost first
    top = ancestors[-1] if ancestors else node
    if head is None or not dag.on_branch(top, call.branch, head.seq):
        return "branch", None
    if node.id in call.stack_ids:  # a caller's call line: its expose, else the window
        return ("call_line" if node.expose in ("llm", "hidden") else "callers"), None
    chain: list[Node] = []
    anchor: Node | None = None
    for parent in ancestors:
        if parent.id in call.stack_ids:
            anchor = parent
            break
        chain.append(parent)
    inner = [node, *chain]
    for position in range(len(chain) - 1, -1, -1):
        frame, child = chain[position], inner[position]
        if frame.expose in ("io", "hidden"):
            return "inside", frame
        if frame.expose == "llm" and child.kind != "llm":
            return "inside_llm", frame
    if node.kind == "code" and node.expose in ("llm", "hidden"):
        return "own_line", None
    if anchor is not None:
        position = call.stack_ids[anchor.id]
        current = stack[position + 1] if position + 1 < len(stack) else call.node
        if inner[-1].seq > current.seq:
            return "concurrent", current
        if anchor.id == stack[-1].id:
            return _budget("subcalls", dag, node, call)
    return _budget("callers", dag, node, call)


def _budget(
    code: HiddenCode, dag: ContextDAG, node: Node, call: Call
) -> tuple[HiddenCode, Node | None]:
    """`code`, unless the node fell to the call's token budget rather than to its window:
    then `compacted`, naming the summary that stood for it (None: dropped)."""
    window = call.window
    if window is None or window.tokens is None:
        return code, None
    limit = window.callers if code == "callers" else window.subcalls
    if limit is not None and limit >= 0:  # a count window: it may be what cut the node
        return code, None
    compacted = call.node.meta.get("compacted") or {}
    summary = dag.get(compacted.get("summary") or "")
    if summary is not None:
        first, last = summary.meta.get("covers", (0, -1))
        if first <= node.seq <= last:
            if node.id != summary.id and node.meta.get("covers") is not None:
                return "superseded", summary  # not in the report: no history of its own
            return "compacted", summary
    return "compacted", None


def reason_text(
    dag: ContextDAG, code: HiddenCode, node: Node, frame: Node | None, call: Call
) -> str:
    """The reason as people read it, e.g. `inside gui_step #3 (expose='io')`."""
    window = call.window
    if code == "branch":
        return "on another branch"
    if code == "call_line":
        return f"its call line is not shown (expose={node.expose!r})"
    if code == "own_line":
        return f"expose={node.expose!r}: its own line is not shown"
    if code == "callers":
        return f"outside render_range (callers={None if window is None else window.callers})"
    if code == "subcalls":
        return f"outside render_range (subcalls={-1 if window is None else window.subcalls})"
    if code == "superseded":
        assert frame is not None
        return f"an older summary, superseded by {label(dag, frame)}"
    if code == "compacted":
        budget = None if window is None else window.tokens
        if frame is None:
            return f"dropped to fit render_range tokens={budget}"
        return f"compacted into {label(dag, frame)} (render_range tokens={budget})"
    assert frame is not None, code  # inside, inside_llm and concurrent name a call
    if code == "concurrent":
        return f"concurrent: started after {label(dag, frame)}"
    if code == "inside_llm":
        return f"inside {label(dag, frame)} (expose='llm' shows only its llm exchanges)"
    return f"inside {label(dag, frame)} (expose={frame.expose!r})"


def earlier_hidden(
    dag: ContextDAG, call: Call, nodes: list[Node] | None = None
) -> Iterator[tuple[Node, HiddenCode, Node | None]]:
    """Every node older than the call that it did not read, with its rule, in seq order
    (`nodes`: dag.nodes, when the caller has it already)."""
    for candidate in dag.nodes if nodes is None else nodes:
        if candidate.seq >= call.node.seq:
            break
        if candidate.id not in call.reads:
            code, frame = why(dag, candidate, call)
            yield candidate, code, frame


def template(dag: ContextDAG, text: str, frame: Node | None) -> str:
    """The reason with `{call}` in place of the call it names (`frame`). Filled with the
    function's name it is the rule views group by (`inside gui_step (expose='io')`);
    filled with the call's label, the reason itself."""
    return text if frame is None else text.replace(label(dag, frame), "{call}", 1)


Reason = tuple[HiddenCode, str, int]
"""(code, template, row of the call it names or -1): one entry of the reasons table."""


class CallHiding:
    """The hidden nodes of every llm call of a DAG, by row (the node's index in
    `dag.nodes`), each call stored as a change against the previous call of the same
    function, computed incrementally: only nodes whose reason can differ between the
    two calls are asked again (see _dirty).

    `reasons` is the table the changes point into; `changes[row]` is `(base, removed,
    added)`: base the row of the call it changes (-1: from nothing), removed the rows
    no longer hidden, added `(row, reason index)` for rows newly hidden or hidden for
    another reason.
    """

    def __init__(self, dag: ContextDAG) -> None:
        self.dag = dag
        self.nodes = dag.nodes
        self.row = {node.id: i for i, node in enumerate(self.nodes)}
        self.kids: dict[int, list[int]] = {}
        for i, node in enumerate(self.nodes):
            if node.parent is not None and node.parent in self.row:
                self.kids.setdefault(self.row[node.parent], []).append(i)
        self.reasons: list[Reason] = []
        self._reason_index: dict[tuple[HiddenCode, str, int], int] = {}
        self._seen: dict[tuple[object, ...], int] = {}
        self.changes: dict[int, tuple[int, list[int], list[tuple[int, int]]]] = {}
        last: dict[str, tuple[int, Call, dict[int, int]]] = {}
        for i, node in enumerate(self.nodes):
            if node.kind != "llm":
                continue
            call = call_of(dag, node)
            base = last.get(node.name)
            if base is not None and self._comparable(base[1], call):
                state = base[2]  # the base call's state becomes this call's, in place
                removed, added = self._update(state, self._dirty(base[0], base[1], i, call), call)
                self.changes[i] = (base[0], removed, added)
            else:
                state = {}
                added = []
                for candidate, code, frame in earlier_hidden(dag, call, self.nodes):
                    j = self.row[candidate.id]
                    state[j] = self._reason(code, candidate, frame, call)
                    added.append((j, state[j]))
                self.changes[i] = (-1, [], added)
            last[node.name] = (i, call, state)

    def _reason(self, code: HiddenCode, node: Node, frame: Node | None, call: Call) -> int:
        window = call.window
        seen = (  # all that reason_text reads: formats each distinct reason once
            code,
            None if frame is None else frame.id,
            node.expose,
            None if window is None else (window.callers, window.subcalls),
        )
        index = self._seen.get(seen)
        if index is not None:
            return index
        text = template(self.dag, reason_text(self.dag, code, node, frame, call), frame)
        key = (code, text, -1 if frame is None else self.row[frame.id])
        index = self._reason_index.get(key)
        if index is None:
            index = self._reason_index[key] = len(self.reasons)
            self.reasons.append(key)
        self._seen[seen] = index
        return index

    @staticmethod
    def _comparable(before: Call, after: Call) -> bool:
        """Whether `after` can be worked out from `before` (else from nothing): the same
        branch, the same window, the same stack depth. (A call without a head has no
        earlier nodes, so its successor recomputes everything anyway.)"""
        return (
            before.branch == after.branch
            and before.window == after.window
            and len(before.stack) == len(after.stack)
        )

    def _dirty(self, base_row: int, before: Call, row: int, after: Call) -> set[int]:
        """Rows whose reason may differ between two comparable calls: everything made
        between them, what lies under the frames where their stacks part, what under the
        last shared frame started after the older one of the two stacks' next calls
        (concurrency names that call), and what one read and the other did not."""
        dirty = set(range(base_row, row))
        shared = 0
        for one, other in zip(before.stack, after.stack, strict=True):  # same depth
            if one.id != other.id:
                break
            shared += 1
        walked = {self.row[s[shared].id] for s in (before.stack, after.stack) if shared < len(s)}
        for root in walked:
            self._subtree(root, row, dirty)
        if shared:
            nexts = [
                s[shared] if shared < len(s) else c.node
                for s, c in ((before.stack, before), (after.stack, after))
            ]
            since = min(self.row[n.id] for n in nexts)
            siblings = self.kids.get(self.row[before.stack[shared - 1].id], [])
            for sibling in siblings[bisect.bisect_right(siblings, since) :]:
                if sibling >= row:
                    break
                if sibling not in walked and sibling < base_row:  # else added whole above
                    self._subtree(sibling, row, dirty)
        for node_id in before.reads ^ after.reads:
            j = self.row.get(node_id)
            if j is not None and j < row:
                dirty.add(j)
        return dirty

    def _subtree(self, root: int, until: int, into: set[int]) -> None:
        todo = [root]
        while todo:
            j = todo.pop()
            if j < until:
                into.add(j)
            todo.extend(k for k in self.kids.get(j, ()) if k < until)

    def _update(
        self, state: dict[int, int], dirty: set[int], call: Call
    ) -> tuple[list[int], list[tuple[int, int]]]:
        removed: list[int] = []
        added: list[tuple[int, int]] = []
        for j in sorted(dirty):
            node = self.nodes[j]
            old = state.get(j)
            if node.id in call.reads:
                if old is not None:
                    del state[j]
                    removed.append(j)
                continue
            code, frame = why(self.dag, node, call)
            new = self._reason(code, node, frame, call)
            if new != old:
                state[j] = new
                added.append((j, new))
        return removed, added
