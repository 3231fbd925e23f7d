"""How a render walks the DAG: RenderWalk, one render's view of it from a call stack.

Owns the visibility rules of DESIGN.md §4 decided node by node (`shows`), for a window
walked down from the stack (`collect`), and for what was created since a seq (`since`,
which the incremental history extends with). render.py chooses the nodes with it;
_history.py and _compact.py read it through their protocols. Start at RenderWalk.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from itertools import chain

from openprogram.core.dag import ContextDAG
from openprogram.core.node import Node, by_seq

__all__ = ["SHOW_SELF", "RenderWalk"]

SHOW_SELF = ("io", "full")
"""The expose values whose code nodes show as a line of their own."""
CONVERSATION = "conversation"
"""A code node's meta key: an `llm`-exposed call marked so (chat.respond) reveals the tool
calls answering its llm children too, so later turns see them as tool messages."""


def reveals(parent: Node, child: Node) -> bool:
    """Whether `parent`, a finished code node outside the stack, reveals `child` (rule 3 of
    DESIGN.md §4: "full" all children, "llm" its llm children; an "llm" call marked as a
    conversation also the tool calls its exchanges asked for)."""
    if parent.expose == "full" or child.kind == "llm":
        return True
    return parent.expose == "llm" and CONVERSATION in parent.meta and "tool_call_id" in child.meta


class RenderWalk:
    """One render's view of the DAG as of `before`, from the call `stack` (root first)."""

    def __init__(self, dag: ContextDAG, before: int | None, branch: str, stack: list[Node]) -> None:
        self.dag = dag
        self.before = before
        self.branch = branch
        self.stack = stack
        self._stack_index = {node.id: index for index, node in enumerate(stack)}

    def shows(self, node: Node) -> bool:
        """Whether rules 1-4 of DESIGN.md §4 show `node`: what the walk below decides
        for whole subtrees, decided for one node (the property tests hold them equal)."""
        if not self.exists(node) or "covers" in node.meta:  # a summary shows only by fit()
            return False
        index = self._stack_index
        if node.id in index:
            return node.expose in SHOW_SELF
        if node.kind == "code" and node.expose not in SHOW_SELF:
            return False
        child, parent_id = node, node.parent
        while parent_id is not None and parent_id not in index:  # the interior chain
            parent = self.dag.get(parent_id)
            if parent is None or parent.kind != "code" or parent.expose in ("io", "hidden"):
                return False
            if parent.expose == "llm" and not reveals(parent, child):
                return False
            child, parent_id = parent, parent.parent
        stack = self.stack
        if parent_id is None:  # `child` is a top-level node: the branch's history
            return (not stack or child.seq < stack[0].seq) and self.on_branch(child)
        position = index[parent_id] + 1  # under stack frame J: not after J's stack child
        return position == len(stack) or child.seq < stack[position].seq

    def on_branch(self, top: Node) -> bool:
        head = self.dag.head(self.branch, before=self.before) or self.dag.fork_point(self.branch)
        return head is not None and self.dag.on_branch(top, self.branch, head.seq)

    def exists(self, node: Node) -> bool:
        return self.before is None or node.seq < self.before

    def done(self, node: Node) -> bool:
        if node.status == "running":
            return False
        return self.before is None or (node.end_seq is not None and node.end_seq < self.before)

    def children(self, parent: str, until: int | None) -> Iterator[Node]:
        """Children of `parent`, newest first, with seq below `until` and `before` (a
        C iterator: a window takes its roots without a Python step each)."""
        bounds = [x for x in (until, self.before) if x is not None]
        view = self.dag.children_view(parent)
        if not bounds:
            return reversed(view)
        older = bisect.bisect_left(view, min(bounds), key=by_seq)  # in seq order
        return map(view.__getitem__, range(older - 1, -1, -1))

    def pre_frame_roots(self, frame: Node | None) -> Iterator[Node]:
        """Roots newest first: earlier siblings of each stack node, then that stack
        node's parent (a stack line: its call line alone), up to the branch's history."""
        return chain.from_iterable(self._root_runs(frame))

    def _root_runs(self, frame: Node | None) -> Iterator[Iterable[Node]]:
        current = frame
        while current is not None and current.parent is not None:
            yield self.children(current.parent, current.seq)
            parent = self.dag.node(current.parent)
            yield (parent,)
            current = parent
        if current is None:  # top level: the branch's history up to its head
            top = self.dag.head(self.branch, before=self.before)
            if top is None:  # a fresh fork: its history is the chain it forked from
                top = self.dag.fork_point(self.branch)
                if top is None or not self.exists(top):
                    return
            yield (top,)
        else:
            top = current
        yield from self._chain_before(top)

    def _chain_before(self, top: Node) -> Iterator[Iterable[Node]]:
        """The top-level nodes before `top` along its predecessors, newest first, in runs:
        of its branch's heads (slices, not a node at a time), then the chain it forked
        from."""
        dag, before = self.dag, self.before
        while (predecessor := top.predecessor) is not None:
            heads = dag.heads(top.branch)
            index = bisect.bisect_left(heads, top.seq, key=by_seq)
            found = index < len(heads) and heads[index] is top
            if found and index > 0 and heads[index - 1].id == predecessor:
                # its predecessors on its own branch (all older), newest first, uncopied
                if before is not None and heads[index - 1].seq >= before:
                    index = bisect.bisect_left(heads, before, 0, index, key=by_seq)  # exists()
                yield map(heads.__getitem__, range(index - 1, -1, -1))
                top = heads[0]
                continue
            top = dag.node(predecessor)  # the node its branch forked from
            if before is None or top.seq < before:  # exists()
                yield (top,)

    def expand(self, root: Node, is_stack: bool) -> list[Node]:
        """The visible nodes of one root's subtree, in seq order."""
        if is_stack:
            return [root] if root.expose in SHOW_SELF else []
        shown: list[Node] = []
        self._expand(root, shown)
        return shown

    def _expand(self, node: Node, shown: list[Node]) -> None:
        if "covers" in node.meta:  # a compaction summary: shown by fit() where it is due
            return
        if node.kind != "code" or node.expose in SHOW_SELF:
            shown.append(node)
        if node.kind != "code" or node.expose in ("io", "hidden"):
            return
        for child in self.dag.children_view(node.id):
            if not self.exists(child):
                break
            if reveals(node, child):
                self._expand(child, shown)

    def collect(
        self,
        roots: Iterator[Node],
        limit: int | None,
        levels: list[tuple[str | None, int | None]],
    ) -> list[Node]:
        """Visible nodes of `roots` (newest first; one on the stack is a stack line),
        keeping the last `limit` by seq.

        Stops early once `limit` nodes are held and no older root's subtree can reach
        past the oldest of them; only roots of concurrent work (ContextDAG.overlapped)
        at the given (parent, before-seq) `levels` can, and those are added then. So the
        cost follows the window, not the DAG.
        """
        if limit == 0:
            return []
        keep = None if limit is None or limit < 0 else limit
        found: list[Node] = []
        stack_index = self._stack_index
        for root in roots:
            if keep is not None and len(found) >= keep:
                found.sort(key=by_seq)
                del found[:-keep]
                if self.dag.last_seq(root) < found[0].seq:
                    for late in self._late_roots(levels, root.seq):
                        found.extend(self.expand(late, False))
                    break
            if root.expose == "io" and root.kind == "code" and root.id not in stack_index:
                if "covers" not in root.meta:  # a call showing only its io: its line alone
                    found.append(root)
                continue
            found.extend(self.expand(root, root.id in stack_index))
        found.sort(key=by_seq)
        return found if keep is None else found[-keep:]

    def since(self, floor: int) -> list[Node]:
        """The visible nodes of the full range with seq >= `floor` (any order): what
        `shows` keeps of the nodes created since, found by walking down only the
        subtrees that reach `floor`, so the cost follows them, not the whole DAG (other
        writers' calls into the session included)."""
        found: list[Node] = []
        frame = self.stack[-1] if self.stack else None
        if frame is not None:
            self._level_since(frame.id, None, floor, found)
            if frame.seq >= floor and self.shows(frame):
                found.append(frame)
        current = frame
        while current is not None and current.parent is not None:
            self._level_since(current.parent, current.seq, floor, found)
            parent = self.dag.node(current.parent)
            if parent.seq >= floor and self.shows(parent):
                found.append(parent)
            current = parent
        if current is not None:  # the top stack node: its line is in, its predecessors next
            until: int | None = current.seq
            start = self.dag.get(current.predecessor) if current.predecessor else None
        else:
            until, start = None, self.dag.head(self.branch, before=self.before)
            if start is None:  # a fresh fork: its history is the chain it forked from
                start = self.dag.fork_point(self.branch)
                if start is None or not self.exists(start):
                    return found
        self._chain_since(start, floor, until, found)
        return found

    def _chain_since(
        self, node: Node | None, floor: int, until: int | None, found: list[Node]
    ) -> None:
        """The branch's top-level roots from `node` (newest first, along predecessors)
        that reach `floor`, then any older concurrent one that does."""
        while node is not None:
            if not self.exists(node):
                node = self.dag.get(node.predecessor) if node.predecessor else None
                continue
            if self._reach(node) < floor:
                for late in self.dag.overlapped(None):
                    if (
                        late.seq < node.seq
                        and (until is None or late.seq < until)
                        and self.exists(late)
                        and self._reach(late) >= floor
                        and self.on_branch(late)
                    ):
                        self._expand_since(late, floor, found)
                return
            self._expand_since(node, floor, found)
            node = self.dag.get(node.predecessor) if node.predecessor else None

    def _level_since(self, parent: str, until: int | None, floor: int, found: list[Node]) -> None:
        """Children of `parent` below `until` (newest first) that reach `floor`, then any
        older concurrent one that does."""
        for child in self.children(parent, until):
            if self._reach(child) < floor:
                for late in self.dag.overlapped(parent):
                    if late.seq < child.seq and self.exists(late) and self._reach(late) >= floor:
                        self._expand_since(late, floor, found)
                return
            self._expand_since(child, floor, found)

    def _reach(self, root: Node) -> int:
        """The largest seq that root's subtree can show: its own for a call that reveals
        nothing of its insides, else its subtree's newest."""
        if root.kind == "code" and root.expose in ("io", "hidden"):
            return root.seq
        return self.dag.last_seq(root)

    def _expand_since(self, node: Node, floor: int, found: list[Node]) -> None:
        """`_expand`, keeping only nodes with seq >= floor and skipping subtrees that end
        before it."""
        if "covers" in node.meta:
            return
        if node.seq >= floor and (node.kind != "code" or node.expose in SHOW_SELF):
            found.append(node)
        if node.kind != "code" or node.expose in ("io", "hidden"):
            return
        for child in self.dag.children_view(node.id):
            if not self.exists(child):
                break
            if self.dag.last_seq(child) < floor:
                continue
            if reveals(node, child):
                self._expand_since(child, floor, found)

    def _late_roots(self, levels: list[tuple[str | None, int | None]], at_most: int) -> list[Node]:
        roots = []
        for parent, until in levels:
            for node in self.dag.overlapped(parent):
                if node.seq > at_most or (until is not None and node.seq >= until):
                    continue
                if not self.exists(node):
                    continue
                if parent is None and not self.on_branch(node):
                    continue
                roots.append(node)
        return roots
