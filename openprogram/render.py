"""What an LLM call sees: render_context and RenderedContext.

Owns the visibility rules of DESIGN.md §4, the line format, the message mapping and
image retention. Reads the DAG, never writes it. Cost is bounded by the render_range
window, not the DAG size: it walks the stack and, newest first, only the siblings it
needs. Start at render_context().
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any

from openprogram.dag import ContextDAG, Node, RenderRange
from openprogram.errors import UsageError
from openprogram.image import ImageRef
from openprogram.values import replace_surrogates

__all__ = ["RenderedContext", "render_context", "seen_by"]

_SHOW_SELF = ("io", "full")
_DEFAULT_RANGE = RenderRange()


def render_context(
    dag: ContextDAG,
    frame: str | None = None,
    render_range: RenderRange | dict[str, Any] | None = None,
    before: int | None = None,
    *,
    content: Any = None,
    system: str | None = None,
    max_images: int | None = 3,
    max_line_chars: int | None = 20_000,
) -> RenderedContext:
    """Render the history that an llm() call in `frame` sees (DESIGN.md §4).

    frame: id of the code node preparing the call (None: top level).
    render_range: defaults to the frame's own setting.
    before: a seq; render the DAG as it was then (only nodes with a smaller seq, and
        completions that happened before it). `render_context(dag, x.parent,
        before=x.seq, content=x.input)` rebuilds what llm node `x` saw.
    content: the current llm() content (str or parts with ImageRefs), appended last.
    system: the runtime's system prompt; the frame's own `system` follows it.
    max_images: history image parts kept, newest first (None: all); the rest become
        placeholders with an "omitted" report entry. The current content's are always kept.
    """
    frame_node = dag.get(frame) if frame is not None else None
    if frame is not None and frame_node is None:
        raise UsageError(f"frame {frame!r} is not a node of this DAG")
    if frame_node is not None and frame_node.kind != "code":
        raise UsageError(f"frame {frame!r} is a {frame_node.kind} node; frames are code nodes")
    window = _range(render_range, frame_node)
    stack = [*dag.ancestors(frame_node)[::-1], frame_node] if frame_node else []
    walk = _Walk(dag, before, stack[0].branch if stack else dag.branch)

    in_frame: list[Node] = []
    if frame_node is not None:
        in_frame = walk.collect(
            ((child, False) for child in walk.children(frame_node.id, None)),
            window.subcalls,
            [(frame_node.id, None)],
        )
    levels: list[tuple[str | None, int | None]] = [(n.parent, n.seq) for n in stack]
    levels = levels or [(None, None)]
    pre_frame = walk.collect(walk.pre_frame_roots(frame_node), window.callers, levels)

    visible = pre_frame
    if frame_node is not None and frame_node.expose in _SHOW_SELF:
        visible = [*pre_frame, frame_node]
    visible.extend(in_frame)
    visible.sort(key=lambda n: n.seq)
    stack_ids = {n.id for n in stack}
    return RenderedContext(
        dag,
        frame_node,
        visible,
        stack_ids,
        walk,
        content=content,
        system="\n\n".join(s for s in (system, frame_node.system if frame_node else None) if s),
        max_images=max_images,
        max_line_chars=max_line_chars,
    )


def seen_by(dag: ContextDAG, node: Node | str) -> RenderedContext:
    """Rebuild exactly what llm node `node` saw: history, its content and system message.

    Uses what llm() recorded on the node (render_range override, image limit, system
    text); the result's `messages_hash` equals the node's.
    """
    llm_node = dag.node(node) if isinstance(node, str) else node
    if llm_node.kind != "llm":
        raise UsageError(f"node {llm_node.id!r} is a {llm_node.kind} node, not an llm exchange")
    frame = dag.get(llm_node.parent)
    frame_system = frame.system if frame is not None else None
    system = llm_node.system or None  # recorded: the runtime's prompt, then the frame's
    if system and frame_system:
        if system == frame_system:
            system = None
        elif system.endswith("\n\n" + frame_system):
            system = system[: -len(frame_system) - 2]
    return render_context(
        dag,
        llm_node.parent,
        llm_node.meta.get("render_range"),
        before=llm_node.seq,
        content=llm_node.input,
        system=system,
        max_images=llm_node.meta.get("max_images", 3),
    )


def _range(value: RenderRange | dict[str, Any] | None, frame: Node | None) -> RenderRange:
    if value is None:
        return (frame.render_range if frame is not None else None) or _DEFAULT_RANGE
    if isinstance(value, RenderRange):
        return value
    from openprogram.function import _check_render_range

    return _check_render_range(value) or _DEFAULT_RANGE


class _Walk:
    """One render's view of the DAG as of `before`."""

    def __init__(self, dag: ContextDAG, before: int | None, branch: str) -> None:
        self.dag = dag
        self.before = before
        self.branch = branch

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
        """Children of `parent`, newest first, with seq below `until` and `before`."""
        bounds = [x for x in (until, self.before) if x is not None]
        limit = min(bounds) if bounds else None
        for child in reversed(self.dag._children_view(parent)):
            if limit is None or child.seq < limit:
                yield child

    def pre_frame_roots(self, frame: Node | None) -> Iterator[tuple[Node, bool]]:
        """(root, is_stack_line) pairs newest first: earlier siblings of each stack
        node, then that stack node's parent's call line, up to the branch's history."""
        current = frame
        while current is not None and current.parent is not None:
            for sibling in self.children(current.parent, current.seq):
                yield sibling, False
            parent = self.dag.node(current.parent)
            yield parent, True
            current = parent
        if current is None:  # top level: the branch's history up to its head
            top = self.dag.head(self.branch, before=self.before)
            if top is None:  # a fresh fork: its history is the chain it forked from
                top = self.dag.fork_point(self.branch)
                if top is None or not self.exists(top):
                    return
            yield top, False
        else:
            top = current
        while top.predecessor is not None:
            top = self.dag.node(top.predecessor)
            if self.exists(top):
                yield top, False

    def expand(self, root: Node, is_stack: bool) -> list[Node]:
        """The visible nodes of one root's subtree, in seq order."""
        if is_stack:
            return [root] if root.expose in _SHOW_SELF else []
        shown: list[Node] = []
        self._expand(root, shown)
        return shown

    def _expand(self, node: Node, shown: list[Node]) -> None:
        if node.kind != "code" or node.expose in _SHOW_SELF:
            shown.append(node)
        if node.kind != "code" or node.expose in ("io", "hidden"):
            return
        for child in self.dag._children_view(node.id):
            if not self.exists(child):
                break
            if node.expose == "full" or child.kind == "llm":
                self._expand(child, shown)

    def collect(
        self,
        roots: Iterator[tuple[Node, bool]],
        limit: int | None,
        levels: list[tuple[str | None, int | None]],
    ) -> list[Node]:
        """Visible nodes of `roots` (newest first), keeping the last `limit` by seq.

        Stops early once `limit` nodes are held and no older root's subtree can reach
        past the oldest of them; only roots of concurrent work (ContextDAG.overlapped)
        at the given (parent, before-seq) `levels` can, and those are added then. So the
        cost follows the window, not the DAG.
        """
        if limit == 0:
            return []
        keep = None if limit is None or limit < 0 else limit
        found: list[Node] = []
        for root, is_stack in roots:
            if keep is not None and len(found) >= keep:
                found.sort(key=lambda n: n.seq)
                del found[:-keep]
                if self.dag.last_seq(root) < found[0].seq:
                    for late in self._late_roots(levels, root.seq):
                        found.extend(self.expand(late, False))
                    break
            found.extend(self.expand(root, is_stack))
        found.sort(key=lambda n: n.seq)
        return found if keep is None else found[-keep:]

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


class RenderedContext:
    """The result of a render: visible nodes, chat messages, report and text lines."""

    def __init__(
        self,
        dag: ContextDAG,
        frame: Node | None,
        nodes: list[Node],
        stack_ids: set[str],
        walk: _Walk,
        *,
        content: Any,
        system: str,
        max_images: int | None,
        max_line_chars: int | None,
    ) -> None:
        self.dag = dag
        self.frame = frame
        self.nodes = nodes
        self.report: list[dict[str, Any]] = []
        self.system = system
        self.content = content
        self._stack_ids = stack_ids
        self._walk = walk
        self._max_line_chars = max_line_chars
        self._lines = [self._line(node) for node in nodes]
        self._parts = self._build(max_images)
        self._messages: list[dict[str, Any]] | None = None

    @property
    def reads(self) -> list[str]:
        return [node.id for node in self.nodes]

    # -- lines ---------------------------------------------------------------------------
    def _line(self, node: Node) -> str:
        if node.kind == "user":
            line = f"user: {node.input}"
        elif node.kind == "llm":
            line = f"assistant: {node.output if node.output is not None else ''}"
        else:
            cache = self.dag._text_cache
            cached = cache.get(node.id)
            if cached is not None:
                line = cached
            else:  # inputs never change once recorded: format them once
                hidden = node.hidden_inputs
                shown = node.input
                if hidden and isinstance(shown, dict):
                    shown = {key: v for key, v in shown.items() if key not in hidden}
                line = f"[{node.name} #{self.dag.ordinal(node)}] input={_json(shown)}"
                cache[node.id] = line
            if node.id not in self._stack_ids and self._walk.done(node):
                if node.status == "completed":
                    output = cache.get(node.id + ":out")
                    if output is None:
                        output = cache[node.id + ":out"] = f" output={_json(node.output)}"
                    line += output
                else:
                    line += f" error={node.error or node.status}"
        return self._cut(line, node.id)

    def _cut(self, text: str, node_id: str | None) -> str:
        limit = self._max_line_chars
        if limit is None or len(text) <= limit:
            return text
        self.report.append(
            {
                "kind": "truncated",
                "node_id": node_id,
                "reason": f"{len(text)} characters cut to {limit}",
            }
        )
        return text[:limit] + f"… [{len(text) - limit} characters truncated]"

    def text(self) -> str:
        """One line per visible node, in seq order."""
        return "\n".join(self._lines)

    # -- messages ------------------------------------------------------------------------
    def _build(self, max_images: int | None) -> list[tuple[str, list[dict[str, Any]]]]:
        turns: list[tuple[str, list[dict[str, Any]], str | None]] = []
        if self.system:
            turns.append(("system", [{"type": "text", "text": self.system}], None))
        for node, line in zip(self.nodes, self._lines, strict=True):
            if node.kind == "llm":
                turns.append(("user", _parts(node.input, self._cut, node.id), node.id))
                if node.output is not None:
                    reply = self._cut(str(node.output), node.id)
                    turns.append(("assistant", [{"type": "text", "text": reply}], node.id))
            else:
                turns.append(("user", [{"type": "text", "text": line}], node.id))
        self._retain_images(turns, max_images)
        if self.content is not None:
            turns.append(("user", _parts(self.content, None, None), None))
        merged: list[tuple[str, list[dict[str, Any]]]] = []
        for role, parts, _ in turns:
            if merged and merged[-1][0] == role and role != "system":
                merged[-1][1].extend(parts)
            else:
                merged.append((role, list(parts)))
        return merged

    def _retain_images(
        self, turns: list[tuple[str, list[dict[str, Any]], str | None]], keep: int | None
    ) -> None:
        """Keep the newest `keep` history images; older ones become placeholders."""
        if keep is None:
            return
        seen = 0
        for _, parts, node_id in reversed(turns):
            for position in range(len(parts) - 1, -1, -1):
                if parts[position].get("type") != "image":
                    continue
                seen += 1
                if seen <= keep:
                    continue
                ref: ImageRef = parts[position]["image"]
                parts[position] = {"type": "text", "text": f"[image omitted: {ref}]"}
                self.report.append(
                    {
                        "kind": "omitted",
                        "node_id": node_id,
                        "reason": f"image {ref} dropped: only the {keep} most recent "
                        "history images are sent",
                    }
                )

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat in litellm/OpenAI format, images as PNG data URLs."""
        if self._messages is None:
            self._messages = [_message(role, parts, self.dag) for role, parts in self._parts]
        return self._messages

    @property
    def messages_hash(self) -> str:
        """sha256 of the messages with images by hash: equal renders, equal hashes."""
        canonical = [[role, [_canonical_part(p) for p in parts]] for role, parts in self._parts]
        text = json.dumps(canonical, ensure_ascii=False, sort_keys=True)
        # surrogatepass: lone surrogates (a filename decoded with surrogateescape) hash
        # too, and every other text hashes to the same bytes as before
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def images(self) -> list[ImageRef]:
        """The image references that are sent, in order."""
        return [p["image"] for _, parts in self._parts for p in parts if p.get("type") == "image"]

    def __repr__(self) -> str:
        return f"RenderedContext(nodes={len(self.nodes)}, messages={len(self._parts)})"

    def _repr_html_(self) -> str:
        from openprogram.display.html import context_html

        return context_html(self)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


def _parts(content: Any, cut: Any, node_id: str | None) -> list[dict[str, Any]]:
    """Content (a str or a list of parts with ImageRefs) as internal message parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": cut(content, node_id) if cut else content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image":
            parts.append({"type": "image", "image": part["image"]})
        elif isinstance(part, dict) and part.get("type") == "text":
            text = str(part.get("text", ""))
            parts.append({"type": "text", "text": cut(text, node_id) if cut else text})
        else:
            parts.append({"type": "text", "text": str(part)})
    return parts


def _canonical_part(part: dict[str, Any]) -> Any:
    if part.get("type") == "image":
        return {"image": part["image"].sha256}
    return part


def _message(role: str, parts: list[dict[str, Any]], dag: ContextDAG) -> dict[str, Any]:
    if all(p["type"] == "text" for p in parts) and len(parts) == 1:
        return {"role": role, "content": replace_surrogates(parts[0]["text"])}
    out: list[dict[str, Any]] = []
    for part in parts:
        if part["type"] == "image":
            ref: ImageRef = part["image"]
            image = dag.blobs.get(ref.sha256)
            if image is None:
                out.append({"type": "text", "text": f"[image unavailable: {ref}]"})
            else:
                out.append({"type": "image_url", "image_url": {"url": image.data_url()}})
        else:
            out.append({"type": "text", "text": replace_surrogates(part["text"])})
    return {"role": role, "content": out}
