"""The history part of a render, built node by node, and reused by the next render.

Owns History (the visible nodes' lines, merged messages, running messages hash and
report, with a checkpoint after every node) and the per-DAG cache that lets a full-range
render start from the longest prefix of an earlier one that is still valid, so a step
costs what changed since the last one, not the whole history. render.py decides what is
visible; _pieces.py makes the pieces, _checkpoints.py adds them. Start at
render_history().
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from openprogram.core.dag import ContextDAG
from openprogram.core.image import ImageRef
from openprogram.core.node import Node, by_seq
from openprogram.echo import cut as cut_text
from openprogram.render._checkpoints import (
    UNKEPT,
    Checkpoint,
    add_checkpointed,
    add_unkept,
    cut,
    due,
)
from openprogram.render._chunks import Chunks
from openprogram.render._messages import Entry, MessageStream, Walk, Writer, forget_output
from openprogram.render._pieces import Piece, _unkept, set_aside, write
from openprogram.render._pieces import forget as forget_pieces

_DESCRIBED = 20_000  # characters of an image's description kept in its placeholder
_ENTRIES = 4  # per DAG and settings: a few stacks (threads, nesting) keep their own


@dataclass(frozen=True)
class Settings:
    """Everything besides the DAG and the stack that a history's text depends on."""

    branch: str
    system: str
    max_images: int | None
    max_line_chars: int | None
    timeless: bool  # rendered with before=None


@dataclass(eq=False)  # identity: comparing two histories field by field costs O(history)
class History:
    """The rendered history of one render, and what it takes to extend it."""

    settings: Settings
    stack: list[Node]
    before: int | None
    horizon: int  # every node with a smaller seq was considered
    nodes: Chunks[Node]
    ids: Chunks[str]
    lines: Chunks[str]
    checkpoints: Chunks[Checkpoint]
    start: Checkpoint
    stream: MessageStream
    line_reports: list[dict[str, Any]]
    build_reports: list[dict[str, Any]]
    omitted: list[dict[str, Any]]  # oldest first; the report lists them newest first
    # visible nodes whose text may still change: (node, what it was, seq to redo from)
    open: list[tuple[Node, tuple[Any, ...], int]] = field(default_factory=list)
    extras: dict[str, tuple[int, int]] = field(default_factory=dict)  # include= only
    kept_from: int | None = None  # redo from here: the oldest history image still sent
    # the text of the base's lines and how much of it, with how many lines, is ours
    seed: tuple[str, int, int] | None = None
    # the llm node this history was recorded on (runtime sets it), and that of the
    # history it continues with how many of its omitted entries: a node's report then
    # stores only its own entries (recorded_report reads them back)
    recorded_on: str | None = None
    omitted_base: tuple[str, int] | None = None
    _text: str | None = None

    def report(self) -> list[dict[str, Any]]:
        return [*self.line_reports, *self.build_reports, *self.omitted[::-1]]

    def own_report(self) -> tuple[list[dict[str, Any]], tuple[str, int] | None]:
        """The report less the omitted entries that `omitted_base`'s node records (the
        oldest ones), and that base: what an llm node stores, O(1) per step."""
        inherited = self.omitted_base[1] if self.omitted_base else 0
        own = [*self.line_reports, *self.build_reports, *self.omitted[inherited:][::-1]]
        return own, self.omitted_base

    def text(self) -> str:
        """The lines joined: the base's text up to the prefix, then the rest (one copy of
        a string rather than a visit to every line: long histories stay cheap)."""
        if self._text is None:
            if self.seed is None:
                self._text = "\n".join(self.lines)
            else:
                base, chars, count = self.seed
                rest = "\n".join(self.lines.since(count))
                joint = "\n" if count and len(self.lines) > count else ""
                self._text = base[:chars] + joint + rest
                self.seed = None
        return self._text

    def seed_for(self, chars: int, count: int) -> tuple[str, int, int] | None:
        """The `seed` of a prefix of this history (its first `count` lines, `chars` of
        text): this history's text when it was joined already, else None."""
        return None if self._text is None else (self._text, chars, count)

    def text_length(self) -> int:
        """len(self.text()), without joining the lines when the checkpoints know it."""
        if self._text is None and self.checkpoints:
            return self.checkpoints[-1].chars
        return len(self.text())


class _Redo(Exception):
    """The prefix reaches past a change found while building the rest: redo from seq."""

    def __init__(self, seq: int) -> None:
        self.seq = seq


class _Cache:
    """One DAG's histories for one Settings: the newest few, and the newest of each call
    stack's root (concurrent writers into one session each continue their own)."""

    def __init__(self) -> None:
        self.recent: list[History] = []
        self.by_root: OrderedDict[str | None, History] = OrderedDict()

    def candidates(self, root: str | None) -> list[History]:
        own = self.by_root.get(root)  # first: usually the one valid longest
        if own is None:
            return [*self.recent]
        return [own, *(entry for entry in self.recent if entry is not own)]

    def keep(self, history: History, replaced: History | None) -> None:
        recent = self.recent
        if replaced is not None and replaced in recent:
            recent.remove(replaced)
        recent.append(history)
        del recent[:-_ENTRIES]
        root = history.stack[0].id if history.stack else None
        self.by_root[root] = history
        self.by_root.move_to_end(root)
        while len(self.by_root) > _ROOTS:
            self.by_root.popitem(last=False)


_ROOTS = 256  # stack roots (concurrent top-level calls) whose newest history is kept
_lock = threading.Lock()
_caches: weakref.WeakKeyDictionary[ContextDAG, dict[Settings, _Cache]] = weakref.WeakKeyDictionary()


def render_history(
    walk: Walk,
    stack: list[Node],
    settings: Settings,
    include: Sequence[str],
    cold: Callable[[], tuple[list[Node], set[str]]],
) -> History:
    """The full-range history (DESIGN.md §4 with callers=None, subcalls=-1), extending
    the cached history whose prefix stays valid longest; `cold()` gives the visible nodes
    (and which of them only include= shows) when there is none."""
    dag, before = walk.dag, walk.before
    horizon = before if before is not None else dag.newest_seq + 1
    with _lock:
        cache = _caches.setdefault(dag, {}).setdefault(settings, _Cache())
        candidates = cache.candidates(stack[0].id if stack else None)
    best, floor = None, 0
    for entry in candidates:
        valid = _valid_until(entry, walk, stack, horizon, include, floor)
        if valid > floor:
            best, floor = entry, valid
    while True:
        try:
            if best is None:
                nodes, extra_ids = cold()
                history = _build(walk, stack, settings, horizon, None, 0, nodes, extra_ids)
            else:
                floor = cut(best.nodes, best.checkpoints, floor)
                tail, extra_ids = _tail(walk, floor, horizon, include)
                history = _build(walk, stack, settings, horizon, best, floor, tail, extra_ids)
            break
        except _Redo as redo:
            floor = min(floor, redo.seq)
            best = best if floor > 0 else None
    with _lock:
        cache.keep(history, best)
    return history


def forget(dag: ContextDAG, node_id: str) -> None:
    """A call of `dag` runs again (a resumed call reopened): drop its kept pieces and
    its output's text, and the cached histories, which take what had finished as never
    changing."""
    forget_pieces(dag, node_id)
    forget_output(dag, node_id)
    with _lock:
        _caches.pop(dag, None)


def build_history(
    walk: Walk, stack: list[Node], settings: Settings, nodes: list[Node], extra_ids: set[str]
) -> History:
    """A history from scratch, outside the cache (windowed renders)."""
    horizon = walk.before if walk.before is not None else walk.dag.newest_seq + 1
    return _build(walk, stack, settings, horizon, None, 0, nodes, extra_ids, kept=False)


def _valid_until(
    entry: History,
    walk: Walk,
    stack: list[Node],
    horizon: int,
    include: Sequence[str],
    beat: int = 0,
) -> int:
    """The seq below which `entry`'s history is what this render would make (0: none);
    at most `beat` when it cannot be more (its open nodes are then not looked at)."""
    if entry.before is not None and walk.before is not None and walk.before < entry.before:
        return 0  # an earlier moment: completions since then would show
    valid = min(entry.horizon, horizon)
    common = 0  # stacks are chains: they agree up to the first difference
    for old, new in zip(entry.stack, stack, strict=False):
        if old is not new:
            break
        common += 1
    for node in (*entry.stack[common:], *stack[common:]):
        valid = min(valid, node.seq)
    kept_from = entry.kept_from
    if kept_from is not None:
        valid = min(valid, kept_from)
    if valid <= beat:  # another candidate is valid as long already
        return valid
    for node, was, redo in entry.open:
        if redo < valid and not _same(was, _state(node, walk)):
            valid = redo
    if entry.extras or include:
        wanted = set(include)
        for node_id, (_, redo) in entry.extras.items():
            if redo < valid and node_id not in wanted:
                valid = redo
        nodes = entry.nodes
        for node_id in include:
            wanted_node = walk.dag.get(node_id)
            if wanted_node is None or wanted_node.seq >= valid or not walk.exists(wanted_node):
                continue
            index = nodes.bisect(wanted_node.seq, by_seq)
            if index == len(nodes) or nodes[index] is not wanted_node:
                valid = min(valid, _redo_seq(walk.dag, wanted_node))
    return max(valid, 0)


def _tail(
    walk: Walk, floor: int, horizon: int, include: Sequence[str]
) -> tuple[list[Node], set[str]]:
    """The visible nodes with seq >= floor, found from the stack down (render.py)."""
    tail = [n for n in walk.since(floor) if n.seq < horizon]
    tail.sort(key=by_seq)
    extra_ids: set[str] = set()
    if include:
        shown_ids = {n.id for n in tail}
        for node_id in include:
            node = walk.dag.get(node_id)
            if node is None or node.seq < floor or node_id in shown_ids or not walk.exists(node):
                continue
            tail.append(node)
            shown_ids.add(node_id)
            extra_ids.add(node_id)
        tail.sort(key=by_seq)
    return tail, extra_ids


_NOT_DONE = (None, None, None, False, None, None, None)


def _state(node: Node, walk: Walk) -> tuple[Any, ...]:
    """What a node's text depends on besides its fixed record. A call not done for this
    reader shows its input alone (Writer.line), whatever else of it changes."""
    meta = node.meta
    done = walk.done(node)
    if not done and node.kind == "code" and "covers" not in meta:
        return _NOT_DONE
    return (
        node.status,
        node.end_seq,
        node.error,
        done,
        node.output,
        meta.get("render_output"),
        meta.get("tool_calls"),
    )


def _same(was: tuple[Any, ...], now: tuple[Any, ...]) -> bool:
    return was[:4] == now[:4] and all(a is b for a, b in zip(was[4:], now[4:], strict=True))


def _redo_seq(dag: ContextDAG, node: Node) -> int:
    """Where a change of `node` takes effect: a tool result shows with the call that asked."""
    asker = dag.get(node.meta.get("asked_by")) if "tool_call_id" in node.meta else None
    return min(node.seq, asker.seq) if asker is not None else node.seq


def _build(
    walk: Walk,
    stack: list[Node],
    settings: Settings,
    horizon: int,
    base: History | None,
    floor: int,
    tail: list[Node],
    extra_ids: set[str],
    *,
    kept: bool = True,
) -> History:
    """`base`'s history below seq `floor`, then `tail` (the visible nodes from there).
    `kept`: False for a history no later render extends (no checkpoints, one hash)."""
    writer = Writer(walk, {n.id for n in stack}, settings.max_line_chars)
    stream = MessageStream(continued=kept)
    if base is None:
        if settings.system:
            stream.add("system", [{"type": "text", "text": settings.system}], None)
        start = UNKEPT
        if kept:  # where a later render continuing this one may start from
            last = len(stream.messages[-1][1]) if stream.messages else 0
            start = Checkpoint(stream.state(), len(stream.messages), last, 0, 0, 0, (), 0, 0)
        history = History(
            settings,
            stack,
            walk.before,
            horizon,
            Chunks(),
            Chunks(),
            Chunks(),
            Chunks(),
            start,
            stream,
            [],
            [],
            [],
        )
    else:
        history = _prefix(base, floor, stack, walk.before, horizon, stream)
    if tail or base is not None:  # an empty tail still checks the prefix's images and results
        _extend(history, writer, tail, extra_ids, base, kept)
    return history


def _prefix(
    base: History,
    floor: int,
    stack: list[Node],
    before: int | None,
    horizon: int,
    stream: MessageStream,
) -> History:
    """`base` cut to the nodes below seq `floor`, ready to be extended."""
    count = base.nodes.bisect(floor, by_seq)
    point = base.checkpoints[count - 1] if count else base.start
    stream.restore(base.stream, point.messages, point.last, point.state)
    return History(
        base.settings,
        stack,
        before,
        horizon,
        base.nodes.prefix(count),
        base.ids.prefix(count),
        base.lines.prefix(count),
        base.checkpoints.prefix(count),
        base.start,
        stream,
        base.line_reports[: point.line_reports],
        base.build_reports[: point.build_reports],
        base.omitted[: point.omitted],
        [entry for entry in base.open if entry[2] < floor],
        {key: value for key, value in base.extras.items() if value[0] < floor},
        None,  # no history image in the prefix is still sent: they start at floor or later
        base.seed_for(point.chars, count),
        omitted_base=(
            (base.recorded_on, point.omitted)
            if base.recorded_on is not None and point.omitted
            else None
        ),
    )


def _extend(
    history: History,
    writer: Writer,
    tail: list[Node],
    extra_ids: set[str],
    base: History | None,
    kept: bool,
) -> None:
    """Append `tail`'s lines and turns to `history`, checkpointing after each node
    (when `kept`: a later render may continue from any of them)."""
    walk, dag = writer.walk, writer.walk.dag
    live = walk.before is None  # then every completed node is done for the reader
    opened = [
        (node, _state(node, walk), _redo_seq(dag, node))
        for node in (tail if kept else ())
        if node.status != "completed" or not (live or walk.done(node))
    ]
    carried = _carried_by_prefix(history, base, writer, tail)
    pieces = write(writer, tail, carried)
    images = sum(map(_images_of, pieces))
    _check_prefix_images(history, images)
    omitted: list[tuple[int, dict[str, Any]]] = []
    replaced: dict[int, tuple[Entry, ...]] = {}
    kept_from = None
    if images:
        kept_from = _retain_images(pieces, tail, history.settings.max_images, omitted, replaced)
    omitted.reverse()  # oldest first, as stored
    if not kept:  # nothing continues from inside this history: one pass, no checkpoints
        add_unkept(history, pieces, replaced, omitted)
    else:  # a checkpoint after each node: a later render may continue from any of them
        due_at = due(tail, pieces, opened, history.stack, len(history.checkpoints))
        add_checkpointed(history, pieces, due_at, replaced, omitted)
    history.nodes.extend(tail)
    history.ids.extend(list(map(_id_of, tail)))
    history.lines.extend(list(map(_line_of, pieces)))
    history.open.extend(opened)
    for node_id in extra_ids:
        node = dag.node(node_id)
        history.extras[node_id] = (node.seq, _redo_seq(dag, node))
    history.kept_from = kept_from


_images_of = attrgetter("images")
_line_of = attrgetter("line")
_id_of = attrgetter("id")


def _check_prefix_images(history: History, later: int) -> None:
    """_Redo when the prefix omits an image this render sends: the prefix holds no image
    still sent, which stays true only while `later` (the images after it) fill the limit."""
    keep = history.settings.max_images
    if keep is None or later >= keep or not history.checkpoints:
        return
    before = history.checkpoints[-1].images
    if not before:
        return
    sent_from = max(before - (keep - later), 0)  # index of the oldest image to send
    index = history.checkpoints.bisect(sent_from, _images, right=True)
    raise _Redo(history.nodes[index].seq)


def _images(point: Checkpoint) -> int:
    return point.images


def _carried_by_prefix(
    history: History, base: History | None, writer: Writer, tail: list[Node]
) -> set[str]:
    """Tool results in `tail` that a call in the prefix already carries (its turns show
    them). _Redo from that call when what it would carry changed: a result it did not
    take became visible, one it took is no longer shown, or one it took can no longer be
    an answer from here (this render's stack holds it, or it is not done for this reader:
    the rule of Writer.answers)."""
    carried: set[str] = set()
    nodes, dag = history.nodes, writer.walk.dag
    if base is None or not nodes or not dag.tool_results:  # no tool result anywhere
        return carried

    def prefix_answers(node: Node) -> tuple[Node, tuple[str, ...]] | None:
        meta = node.meta
        if "tool_call_id" not in meta or "asked_by" not in meta:
            return None
        asker = dag.get(meta["asked_by"])
        if asker is None:
            return None
        index = nodes.bisect(asker.seq, by_seq)
        if index == len(nodes) or nodes[index] is not asker:
            return None  # its call is not in the prefix
        return asker, history.checkpoints[index].answers

    for node in tail:
        found = prefix_answers(node)
        if found is None:
            continue
        asker, answers = found
        if node.id in answers and node.id not in writer.stack_ids and writer.walk.done(node):
            carried.add(node.id)
        elif asker.meta.get("tool_calls"):
            raise _Redo(asker.seq)
    shown_ids = {node.id for node in tail}
    for node in base.nodes.since(len(nodes)):
        found = prefix_answers(node)
        if found is not None and node.id in found[1] and node.id not in shown_ids:
            raise _Redo(found[0].seq)
    return carried


def _retain_images(
    pieces: list[Piece],
    tail: list[Node],
    keep: int | None,
    omitted: list[tuple[int, dict[str, Any]]],
    replaced: dict[int, tuple[Entry, ...]],
) -> int | None:
    """Keep the newest `keep` history images; older ones become placeholders, noted in
    `omitted` newest first, in copies of their node's turns put in `replaced` by index
    (the pieces stay as written; a changed turn's canonical JSON is made again). The
    seq of the oldest node whose image is still sent."""
    if keep is None:
        return None
    seen, kept_from = 0, None
    for index in range(len(pieces) - 1, -1, -1):
        if not pieces[index].images:  # history images come only with an llm request (or
            continue  # the results of its tool calls)
        entries, changed = list(pieces[index].entries), False
        for number in range(len(entries) - 1, -1, -1):
            role, parts, extra, canon = entries[number]
            for position in range(len(parts) - 1, -1, -1):
                if parts[position].get("type") != "image":
                    continue
                seen += 1
                if seen <= keep:
                    kept_from = tail[index].seq
                    continue
                if canon is not None:  # the first change to this turn: copy it
                    parts, canon, changed = list(parts), None, True
                    entries[number] = (role, parts, extra, None)
                ref: ImageRef = parts[position]["image"]
                # an image comes with its request, or with a tool result that says whose
                node_id = parts[position].get("node") or tail[index].id
                parts[position] = {"type": "text", "text": _placeholder(parts[position])}
                reason = f"image {ref} dropped: only the {keep} most recent history images are sent"
                omitted.append((index, {"kind": "omitted", "node_id": node_id, "reason": reason}))
        if changed:
            replaced[index] = tuple(entries)
    return kept_from


@contextlib.contextmanager
def _uncached(dag: ContextDAG) -> Iterator[None]:
    """Render `dag` from scratch inside the block, every piece written afresh; its caches
    are left as they were (tests compare the two)."""
    with set_aside(_caches, _lock, dag), _unkept(dag):
        yield


def _placeholder(part: dict[str, Any]) -> str:
    """What an image no longer sent becomes: its description when the value that held it
    gave one (a GUI observation's component list), else a short note."""
    description = part.get("description")
    if description:  # the caller's text: bounded like any line of the history
        return f"[image omitted: {part['image']}; it showed:\n{cut_text(description, _DESCRIBED)}]"
    return f"[image omitted: {part['image']}]"
