"""The context DAG: the `ContextDAG` that orders `Node` records (node.py) by `seq`.

Owns node creation and completion, the indexes render_context needs (children by seq,
ordinals, branch heads, subtree extents) and the networkx view. Knows nothing of models
or stores: a session listens through `ContextDAG.listeners`. Start at ContextDAG.add().
"""

from __future__ import annotations

import bisect
import itertools
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from openprogram.core._tree import tree_lines
from openprogram.core.image import Image, ImageRef
from openprogram.core.node import (
    Effect,
    Expose,
    Kind,
    Node,
    RenderRange,
    Status,
    _new_id,
    _new_node,
    by_seq,
    check_render_range,
    register_view,
    registered_view,
)
from openprogram.core.values import from_jsonable, to_jsonable, with_image_dicts
from openprogram.errors import UsageError

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "ContextDAG",
    "Effect",
    "Expose",
    "Kind",
    "Node",
    "RenderRange",
    "Status",
    "check_render_range",
    "dag_of",
    "register_view",
]

_DAG_SLOT = vars(Node)["_dag"]  # the slot's descriptor: a fast setter


def dag_of(node: Node) -> ContextDAG | None:
    """The live ContextDAG holding this very node (not a copy of it), or None."""
    ref = getattr(node, "_dag", None)
    dag = ref() if ref is not None else None
    return dag if dag is not None and dag.get(node.id) is node else None


Listener = Callable[[str, Node], None]
"""Called with ("created" | "completed", node) after every change; a session persists here."""


class ContextDAG:
    """All nodes of a session, in seq order, with the indexes rendering needs.

    Thread-safe for recording: seq assignment and index updates happen under one lock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counter = itertools.count(1)
        self._nodes: dict[str, Node] = {}
        self._order: list[Node] = []
        self._children: dict[str | None, list[Node]] = {}
        self._ordinal: dict[str, int] = {}
        self._name_counts: dict[tuple[str, str], int] = {}
        self._last_seq: dict[str, int] = {}
        self._overlapped: dict[str | None, dict[str, Node]] = {}
        self._heads: dict[str, list[Node]] = {}
        self._branch_origin: dict[str, tuple[str, int, str] | None] = {"main": None}
        self._graph: nx.DiGraph | None = None
        self._graph_size = 0
        self.blobs: dict[str, Image] = {}
        self.legacy_values: set[str] = set()
        """Ids of nodes loaded from format_version 5 or older, whose non-JSON values were
        stored as reprs (resuming compares them as that version did)."""
        self._summaries: list[Node] = []  # compaction summaries (meta "covers"), seq order
        self._ended = -1  # the largest end_seq a node got: below it, every ended node is done
        self._tool_results = 0  # nodes answering a tool call (meta "tool_call_id")
        self.branch = "main"
        self.listeners: list[Listener] = []
        self._ref = weakref.ref(self)  # one reference object shared by all its nodes

    # -- reading -------------------------------------------------------------------------
    @property
    def nodes(self) -> list[Node]:
        """Every node in seq order."""
        return list(self._order)

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Node]:
        return iter(list(self._order))

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._nodes

    def node(self, node_id: str) -> Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise UsageError(f"no node {node_id!r} in this DAG") from None

    def get(self, node_id: str | None) -> Node | None:
        return None if node_id is None else self._nodes.get(node_id)

    def children(self, node_id: str | None) -> list[Node]:
        """Direct children of `node_id` in seq order (`None`: the top-level nodes)."""
        return list(self._children.get(node_id, ()))

    def children_view(self, node_id: str | None) -> Sequence[Node]:
        """`children(node_id)` uncopied: the DAG's own list, to read at once and never
        change (what a render walks, node after node)."""
        return self._children.get(node_id, ())

    def heads(self, branch: str) -> Sequence[Node]:
        """The top-level nodes recorded on `branch` itself, in seq order, uncopied (to
        read, never change)."""
        return self._heads.get(branch, ())

    @property
    def newest_seq(self) -> int:
        """The seq of the newest node (0 for an empty DAG)."""
        return len(self._order) and self._order[-1].seq

    @property
    def ended_seq(self) -> int:
        """The largest `end_seq` any node got (-1 before one ended): every node that
        ended before it is done."""
        return self._ended

    @property
    def summaries(self) -> Sequence[Node]:
        """The compaction summaries (nodes whose meta has "covers"), in seq order,
        uncopied."""
        return self._summaries

    @property
    def tool_results(self) -> int:
        """How many nodes answer a tool call (meta "tool_call_id")."""
        return self._tool_results

    @property
    def branch_origins(self) -> dict[str, tuple[str, int, str] | None]:
        """Each branch's origin, a copy: (the branch it forked from, that branch's seq
        it forked at, the id of the top-level node it forked after), None for a root."""
        return dict(self._branch_origin)

    def adopt_branches(self, origins: Mapping[str, tuple[str, int, str] | None]) -> None:
        """Take branches (and where they forked) from another DAG's `branch_origins`."""
        with self._lock:
            self._branch_origin.update(origins)

    def find(self, name: str | None = None, kind: Kind | None = None) -> list[Node]:
        return [
            n
            for n in self._order
            if (name is None or n.name == name) and (kind is None or n.kind == kind)
        ]

    def ordinal(self, node: Node | str) -> int:
        """1-based index of the node among nodes of the same name and kind (the `#k`)."""
        node_id = node if isinstance(node, str) else node.id
        return self._ordinal[node_id]

    def ancestors(self, node: Node) -> list[Node]:
        """The node's enclosing frames, innermost first."""
        chain = []
        parent = self._nodes.get(node.parent) if node.parent else None
        while parent is not None:
            chain.append(parent)
            parent = self._nodes.get(parent.parent) if parent.parent else None
        return chain

    def top_level_ancestor(self, node: Node) -> Node:
        while node.parent is not None:
            node = self._nodes[node.parent]
        return node

    def last_seq(self, node: Node) -> int:
        """The largest seq in the node's subtree (itself included)."""
        return self._last_seq.get(node.id, node.seq)

    def fork_point(self, branch: str) -> Node | None:
        """The top-level node `branch` was forked after (None for a root branch)."""
        origin = self._branch_origin.get(branch)
        return None if origin is None else self._nodes.get(origin[2])

    def overlapped(self, parent: str | None) -> list[Node]:
        """Children of `parent` whose subtree grew after a newer sibling had started
        (concurrent work): the only ones whose descendants can outrun newer siblings."""
        return list(self._overlapped.get(parent, {}).values())

    def head(self, branch: str | None = None, *, before: int | None = None) -> Node | None:
        """The newest top-level node of `branch` (with seq < before, when given)."""
        heads = self._heads.get(branch or self.branch, [])
        if before is None:
            return heads[-1] if heads else None
        index = bisect.bisect_left(heads, before, key=by_seq)
        return heads[index - 1] if index else None

    def on_branch(self, top: Node, branch: str, head_seq: int) -> bool:
        """Whether top-level node `top` lies on the predecessor chain of `branch` up to seq."""
        limit = head_seq
        current: str | None = branch
        while current is not None:
            if top.branch == current:
                return top.seq <= limit
            origin = self._branch_origin.get(current)
            if origin is None:
                return False
            current, limit = origin[0], min(limit, origin[1])
        return False

    # -- writing -------------------------------------------------------------------------
    def add(
        self,
        kind: Kind,
        name: str,
        *,
        parent: str | None = None,
        input: object = None,
        status: Status = "running",
        branch: str | None = None,
        **fields: Any,
    ) -> Node:
        """Create a node with the next seq; top-level nodes are chained by predecessor."""
        now = time.time()
        with self._lock:
            seq = next(self._counter)
            node_branch = branch or self.branch
            predecessor = None
            if parent is None:
                heads = self._heads.setdefault(node_branch, [])
                if heads:
                    predecessor = heads[-1].id
                elif (origin := self._branch_origin.get(node_branch)) is not None:
                    predecessor = origin[2]
            node = _new_node(
                {
                    "id": fields.pop("id", None) or _new_id(),
                    "seq": seq,
                    "kind": kind,
                    "name": name,
                    "parent": parent,
                    "predecessor": predecessor,
                    "branch": node_branch,
                    "input": input,
                    "output": None,
                    "status": status,
                    "error": None,
                    "expose": fields.pop("expose", "io"),
                    "render_range": fields.pop("render_range", None),
                    "hidden_inputs": fields.pop("hidden_inputs", []),
                    "system": fields.pop("system", None),
                    "reads": fields.pop("reads", []),
                    "messages_hash": None,
                    "usage": None,
                    "started_at": now,
                    "ended_at": now if status != "running" else None,
                    "end_seq": seq if status != "running" else None,
                    "meta": fields.pop("meta", {}),
                }
            )
            if fields:
                raise UsageError(f"unknown node fields {sorted(fields)!r}")
            self._insert(node)
        self.notify("created", node)
        return node

    def _insert(self, node: Node) -> None:
        _DAG_SLOT.__set__(node, self._ref)
        self._nodes[node.id] = node
        self._order.append(node)
        self._children.setdefault(node.parent, []).append(node)
        key = (node.name, node.kind)
        count = self._name_counts.get(key, 0) + 1
        self._name_counts[key] = count
        self._ordinal[node.id] = count
        if node.parent is None:
            self._heads.setdefault(node.branch, []).append(node)
        if "covers" in node.meta:
            self._summaries.append(node)
        if "tool_call_id" in node.meta:
            self._tool_results += 1
        if node.end_seq is not None and node.end_seq > self._ended:
            self._ended = node.end_seq
        ancestor = self._nodes.get(node.parent) if node.parent is not None else None
        while ancestor is not None:
            self._last_seq[ancestor.id] = node.seq
            if ancestor.parent is None:
                newest = self._heads[ancestor.branch][-1]
            else:
                newest = self._children[ancestor.parent][-1]
            if newest is not ancestor:  # its subtree grows after a newer sibling started
                self._overlapped.setdefault(ancestor.parent, {})[ancestor.id] = ancestor
            ancestor = self._nodes.get(ancestor.parent) if ancestor.parent is not None else None

    def complete(
        self,
        node: Node,
        output: object = None,
        *,
        status: Status = "completed",
        error: str | None = None,
    ) -> Node:
        """Finish a node in place: output or error, status, end time."""
        # one dict update instead of five validated assignments: this is the hot path
        end = self.newest_seq
        node.__dict__.update(
            output=output, status=status, error=error, ended_at=time.time(), end_seq=end
        )
        if end > self._ended:
            self._ended = end
        self.notify("completed", node)
        return node

    def notify(self, event: str, node: Node) -> None:
        """Tell the listeners `node` changed (`event` is "created" or "completed"): what
        add() and complete() do, and what code that changes a recorded node in place
        afterwards calls, so that stores write it again."""
        for listener in self.listeners:
            listener(event, node)

    def add_image(self, image: object) -> ImageRef:
        """Store an image once by content hash and return its reference."""
        value = image if isinstance(image, Image) else Image(image)
        ref = value.ref()
        self.blobs.setdefault(ref.sha256, value)
        return ref

    def image(self, ref: ImageRef | str) -> Image:
        sha = ref if isinstance(ref, str) else ref.sha256
        try:
            return self.blobs[sha]
        except KeyError:
            raise UsageError(f"image sha256:{sha[:12]} is not in this DAG's blob table") from None

    def jsonable(self, value: object) -> object:
        """`value` in JSON-able form, with images moved to the blob table as references."""
        return to_jsonable(value, self.add_image)

    def new_branch(self, at: Node, name: str | None = None) -> str:
        """Start a branch whose history is the current chain up to top-level node `at`."""
        top = self.top_level_ancestor(at)
        branch = name or f"fork-{uuid.uuid4().hex[:8]}"
        with self._lock:
            if branch in self._branch_origin:
                raise UsageError(f"branch {branch!r} exists already")
            self._branch_origin[branch] = (top.branch, top.seq, top.id)
        return branch

    # -- views ---------------------------------------------------------------------------
    @property
    def graph(self) -> nx.DiGraph:
        """A networkx view: parent→child edges kind="calls", predecessor→node kind="follows"."""
        import networkx as nx  # imported where a graph is asked for: it is most of an import

        with self._lock:
            if self._graph is None:
                self._graph = nx.DiGraph()
                self._graph_size = 0
            graph = self._graph
            for node in self._order[self._graph_size :]:
                graph.add_node(node.id, kind=node.kind, name=node.name, seq=node.seq, node=node)
                if node.parent is not None:
                    graph.add_edge(node.parent, node.id, kind="calls")
                if node.predecessor is not None:
                    graph.add_edge(node.predecessor, node.id, kind="follows")
            self._graph_size = len(self._order)
            return graph

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: nodes, branch origins and the images as base64 PNG."""
        import base64

        return {
            "format": "openprogram.dag/1",
            "branch": self.branch,
            "branches": {k: list(v) if v else None for k, v in self._branch_origin.items()},
            "nodes": [_node_json(node) for node in self._order],
            "images": {
                sha: base64.b64encode(image.png()).decode("ascii")
                for sha, image in self.blobs.items()
            },
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ContextDAG:
        import base64

        dag = cls()
        for sha, encoded in data.get("images", {}).items():
            dag.blobs[sha] = Image.recorded(base64.b64decode(encoded), sha)
        for name, origin in data.get("branches", {}).items():
            dag._branch_origin[name] = (origin[0], origin[1], origin[2]) if origin else None
        dag.branch = data.get("branch", "main")
        for raw in data["nodes"]:
            dag.restore(Node.model_validate({**raw, "input": None, "output": None}), raw)
        return dag

    def restore(self, node: Node, raw: dict[str, Any] | None = None) -> None:
        """Insert an already-recorded node (from a store or a dict) keeping its seq."""
        if raw is not None:
            node.input = from_jsonable(raw.get("input"))
            node.output = from_jsonable(raw.get("output"))
        with self._lock:
            if node.id in self._nodes:
                raise UsageError(f"node {node.id!r} is in this DAG already")
            if self._order and node.seq <= self._order[-1].seq:
                raise UsageError(f"node {node.id!r} has seq {node.seq}, not after the last one")
            self._insert(node)
            self._counter = itertools.count(node.seq + 1)

    def tree(self, *, depth: int | None = None, limit: int | None = None) -> str:
        """The call tree as text: one line per node (status, `name #k`, duration, tokens,
        cost, error), indented by nesting. `depth` stops at that many levels; `limit`
        caps the number of nodes shown."""
        return "\n".join(tree_lines(self, depth=depth, limit=limit))

    def __str__(self) -> str:
        if not self._order:
            return "ContextDAG (empty)"
        return f"ContextDAG ({len(self._order):,} nodes)\n" + self.tree(limit=1000)

    def __repr__(self) -> str:
        return f"<ContextDAG: {len(self._order):,} nodes>"

    def _repr_html_(self) -> str:
        return registered_view("dag")(self)


def _node_json(node: Node) -> dict[str, Any]:
    data = node.model_dump(mode="json", exclude={"input", "output"})
    data["input"] = with_image_dicts(node.input)
    data["output"] = with_image_dicts(node.output)
    return data
