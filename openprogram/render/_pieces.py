"""A node's pieces of a render, written once and kept between renders.

Owns Piece (a visible node's line, its turns with their parts' canonical JSON, the report
entries writing them made) and the per-DAG store of the pieces of finished nodes, so a
node that many renders show (a sliding window, many writers into one session) is
written once. _messages.Writer writes them; _history.py puts them together. Start at
write().
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator, MutableMapping
from contextlib import AbstractContextManager
from operator import attrgetter
from typing import Any, NamedTuple, TypeVar

from openprogram.core.dag import ContextDAG, Node
from openprogram.render._messages import Entry, Walk, Writer, canonical

# the pieces kept per DAG and line limit, newest written: enough for every node that many
# writers into one session, or a window, shows again; bounded by count and by size
_KEPT = 65_536
_KEPT_BYTES = 64 << 20  # about: a piece's structures, and its canonical JSON
_PIECE_BYTES = 400


class Piece(NamedTuple):
    """What one visible node adds to a history."""

    line: str
    line_reports: tuple[dict[str, Any], ...]
    entries: tuple[Entry, ...]  # its turns, with their parts' canonical JSON
    build_reports: tuple[dict[str, Any], ...]
    answers: tuple[str, ...]  # the tool results its turns carry
    images: int  # history image parts in its turns (an llm node's request)
    plain: str | None  # the role of its one plain turn (no tool call or result), if so


class _Kept:
    """One DAG's pieces for one line limit, and about how many bytes they hold."""

    def __init__(self) -> None:
        self.pieces: dict[str, Piece] = {}
        self.bytes = 0

    def keep(self, new: list[tuple[str, Piece]]) -> None:
        pieces = self.pieces
        for node_id, piece in new:  # one written again (it went, or another thread's) once
            old = pieces.get(node_id)
            self.bytes += _size(piece) - (_size(old) if old is not None else 0)
            pieces[node_id] = piece
        if len(pieces) > _KEPT or self.bytes > _KEPT_BYTES:
            # the older half goes, at once (a dict's oldest entry is slow to find one by
            # one); what a render needs again is written again
            newest = list(pieces.items())[len(pieces) // 2 :]
            pieces.clear()
            pieces.update(newest)
            self.bytes = sum(_size(piece) for piece in pieces.values())


def _size(piece: Piece) -> int:
    return _PIECE_BYTES + sum(len(entry[3] or "") for entry in piece.entries)


_id_of = attrgetter("id")
_lock = threading.Lock()
_kept: weakref.WeakKeyDictionary[ContextDAG, dict[int | None, _Kept]] = weakref.WeakKeyDictionary()


def write(writer: Writer, nodes: list[Node], carried: set[str]) -> list[Piece]:
    """The pieces of `nodes` (visible, in seq order) as `writer` makes them: kept ones
    as they were, the rest written now (`carried`: tool results an earlier node's turns
    already show) and kept when they can no longer change."""
    walk, stack_ids = writer.walk, writer.stack_ids
    with _lock:
        store = _kept.setdefault(walk.dag, {}).get(writer.max_line_chars)
        if store is None:
            store = _kept[walk.dag][writer.max_line_chars] = _Kept()
    kept = store.pieces
    # a kept piece's node finished, off the stack, and is no tool call or result: it
    # stays as written for every reader it is done for. All are when no node ended at or
    # after `before` and no stack node has one (the common case: a live step's render)
    before, get = walk.before, kept.get
    if (before is None or walk.dag.ended_seq < before) and not any(
        map(kept.__contains__, stack_ids)
    ):
        found = list(map(get, map(_id_of, nodes)))
    else:
        found = [
            piece
            if (piece := get(node.id)) is not None and walk.done(node) and node.id not in stack_ids
            else None
            for node in nodes
        ]
    if None not in found:
        return found  # type: ignore[return-value]
    fresh = [node for node, piece in zip(nodes, found, strict=True) if piece is None]
    made = iter(_written(writer, fresh, carried))
    pieces = [piece if piece is not None else next(made) for piece in found]
    new = [
        (node.id, piece)
        for node, piece, old in zip(nodes, pieces, found, strict=True)
        if old is None and _final(node, walk, stack_ids)
    ]
    if new:
        with _lock:
            store.keep(new)
    return pieces


def _final(node: Node, walk: Walk, stack_ids: set[str]) -> bool:
    """Whether `node`'s pieces are fixed: it finished (for this reader too), is not on
    the stack, and is neither a tool call nor a tool result (their turns depend on
    which of their partners the render shows)."""
    meta = node.meta
    return (
        node.status == "completed"
        and walk.done(node)
        and node.id not in stack_ids
        and "tool_calls" not in meta
        and "tool_call_id" not in meta
    )


def _written(writer: Writer, nodes: list[Node], carried: set[str]) -> list[Piece]:
    saved = writer.reports
    try:
        reports: list[dict[str, Any]] = []
        writer.reports = reports
        lines, line_reports = [], []
        for node in nodes:
            lines.append(writer.line(node))
            line_reports.append(tuple(reports))
            reports.clear()
        groups = writer.turns(nodes, lines, carried)
    finally:
        writer.reports = saved
    pieces, used = [], 0
    for node, line, own, (turns, answers, count) in zip(
        nodes, lines, line_reports, groups, strict=True
    ):
        images = 0
        if node.kind == "llm":  # history images come only with its request and its
            images = sum(p.get("type") == "image" for t in turns for p in t[1])  # tool results
        entries = tuple(
            (role, parts, extra, ", ".join([canonical(p) for p in parts]))
            for role, parts, _, extra in turns
        )
        built = tuple(reports[used:count])
        used = count
        only = entries[0] if len(entries) == 1 else None
        plain = only[0] if only is not None and only[2] is None and only[1] else None
        pieces.append(Piece(line, own, entries, built, answers, images, plain))
    return pieces


K = TypeVar("K")


@contextlib.contextmanager
def set_aside(
    entries: MutableMapping[K, Any], lock: AbstractContextManager[object], key: K
) -> Iterator[None]:
    """Inside the block `entries` has no `key` (what is made there is dropped after);
    its entry is back as it was after. Tests render from scratch with it."""
    with lock:
        saved = entries.pop(key, None)
    try:
        yield
    finally:
        with lock:
            entries.pop(key, None)
            if saved is not None:
                entries[key] = saved


def _unkept(dag: ContextDAG) -> contextlib.AbstractContextManager[None]:
    """Write `dag`'s pieces afresh inside the block."""
    return set_aside(_kept, _lock, dag)


def forget(dag: ContextDAG, node_id: str) -> None:
    """Drop a node's kept pieces: it is running again (a resumed call reopened)."""
    with _lock:
        for store in _kept.get(dag, {}).values():
            store.pieces.pop(node_id, None)
