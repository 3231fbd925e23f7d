"""How a stored session's DAG is rebuilt: a fork's shared history (its parent's nodes as
they were at the fork, recursively), then the session's own rows, then its branches.

Session.open and Session.fork (session.py) use it. Start at load_dag().
"""

from __future__ import annotations

from contextlib import suppress

from openprogram.core.dag import ContextDAG, Node
from openprogram.errors import StoreError, UsageError
from openprogram.store.base import Store
from openprogram.store.format import FORMAT_VERSION, SessionInfo, decode_rows

__all__ = ["load_dag", "restore_branches", "shared_history"]


def shared_history(source: ContextDAG, at: Node, cut: int) -> list[Node]:
    """Copies of `source`'s nodes as they were when seq `cut` was the newest: the
    top-level chain up to at's top-level call, each with its nodes up to `cut`.
    Nodes that finished later (and at's callers) are copied as running."""
    top = source.top_level_ancestor(at)
    callers = {n.id for n in source.ancestors(at)}
    chain = [
        n
        for n in source.children(None)
        if n.seq <= top.seq and source.on_branch(n, top.branch, top.seq)
    ]
    copies: list[Node] = []
    stack = list(chain)
    while stack:
        node = stack.pop()
        if node.seq > cut:
            continue
        copy = node.model_copy(update={"meta": dict(node.meta)})
        if node.id in callers or (node.end_seq is not None and node.end_seq > cut):
            copy.status, copy.output, copy.error = "running", None, None
            copy.ended_at = copy.end_seq = None
        copies.append(copy)
        stack.extend(source.children(node.id))
    return sorted(copies, key=lambda n: n.seq)


def load_dag(
    store: Store,
    info: SessionInfo,
    depth: int = 0,
    rows: set[int] | None = None,
    owners: dict[str, str] | None = None,
) -> ContextDAG:
    """The DAG of `info`: for a fork, its parent's shared history (recursively), then
    the session's own rows, which override inherited nodes of the same id (their seqs
    are added to `rows`). `owners` gets each inherited node's id -> the session whose
    own node it is (its parent's, or further up the chain of forks)."""
    nodes: dict[str, Node] = {}
    old_values: set[str] = set()  # nodes whose values format_version 5 or older stored
    if info.parent is not None:
        parent = store.session(info.parent)
        if parent is None or depth > 100 or info.at is None or info.cut is None:
            raise StoreError(
                f"session {info.id!r} is a fork of {info.parent!r}, which {store.url} "
                "does not hold (or not as recorded); it cannot be loaded"
            )
        theirs: dict[str, str] = {}
        source = load_dag(store, parent, depth + 1, owners=theirs)
        for copy in shared_history(source, source.node(info.at), info.cut):
            nodes[copy.id] = copy
            if owners is not None:
                owners[copy.id] = theirs.get(copy.id, parent.id)
        old_values |= source.legacy_values
    version = getattr(store, "format_version", FORMAT_VERSION)
    for node in decode_rows(store.rows(info.id), info.id):
        nodes[node.id] = node
        if info.old_values(node.seq, version):
            old_values.add(node.id)
        else:
            old_values.discard(node.id)
        if rows is not None:
            rows.add(node.seq)
    dag = ContextDAG()
    dag.legacy_values = old_values & nodes.keys()
    for node in sorted(nodes.values(), key=lambda n: n.seq):
        dag.restore(node)
    restore_branches(dag, info)
    return dag


def restore_branches(dag: ContextDAG, info: SessionInfo) -> None:
    """Register the branches the nodes are on: the session's own (a fork's) from its
    info, any other from the predecessor of its first top-level node."""
    if info.branch != "main" and info.at is not None:
        dag.new_branch(dag.node(info.at), info.branch)
    firsts: dict[str, Node] = {}
    for node in dag.children(None):
        if node.branch not in ("main", info.branch):
            firsts.setdefault(node.branch, node)
    for branch, first in firsts.items():
        if first.predecessor is not None and first.predecessor in dag:
            with suppress(UsageError):  # registered already
                dag.new_branch(dag.node(first.predecessor), branch)
    dag.branch = info.branch
