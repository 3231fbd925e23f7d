"""What an LLM call sees: render_context and RenderedContext.

Owns the visibility rules of DESIGN.md §4, the line format (outputs as later calls see
them), the message mapping (tool calls and results in the provider's shape) and image
retention. Reads the DAG, never writes it. Cost is bounded by the render_range
window, not the DAG size: it walks the stack and, newest first, only the siblings it
needs. Start at render_context().
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Sequence
from typing import Any

from openprogram.dag import ContextDAG, Node, RenderRange, _view, check_render_range
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
    include: Sequence[str] = (),
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
    max_line_chars: longest line; a longer output is cut to whole items where it can be,
        saying how much was left out, with a "truncated" report entry.
    include: ids of nodes shown whatever the rules and the range say: a tool loop's
        earlier turns and tool results, which its later turns always see.
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
    if include:
        shown = {n.id for n in visible}
        visible.extend(
            node
            for node_id in include
            if node_id not in shown and (node := dag.get(node_id)) is not None and walk.exists(node)
        )
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
        include=llm_node.meta.get("tool_loop", ()),
    )


def _range(value: RenderRange | dict[str, Any] | None, frame: Node | None) -> RenderRange:
    if value is None:
        return (frame.render_range if frame is not None else None) or _DEFAULT_RANGE
    if isinstance(value, RenderRange):
        return value
    return check_render_range(value) or _DEFAULT_RANGE


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
        built = self._build(max_images)
        self._parts = [(role, parts) for role, parts, _ in built]
        self._extras: list[dict[str, Any] | None] = [extra for _, _, extra in built]
        self._messages: list[dict[str, Any]] | None = None

    @property
    def reads(self) -> list[str]:
        return [node.id for node in self.nodes]

    # -- lines ---------------------------------------------------------------------------
    def _line(self, node: Node) -> str:
        if node.kind == "user":
            line = f"user: {node.input}"
        elif node.kind == "llm":
            line = f"assistant: {_reply_text(node)}"
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
                    line += " output=" + self._output(node, len(line), as_json=True)
                else:
                    line += f" error={node.error or node.status}"
        return self._cut(line, node.id)

    def _output(self, node: Node, used: int, *, as_json: bool) -> str:
        """A completed code node's output as later calls see it: its render_output when
        it has one, cut to whole items (saying how much was left out) when too long."""
        cache = self.dag._text_cache
        key = f"{node.id}:{'out' if as_json else 'tool'}"
        text = cache.get(key)
        if text is None:
            meta = node.meta
            value = meta.get("render_output", node.output)
            limit = self._max_line_chars
            # room for the line so far and the note saying what was cut
            budget = None if limit is None else max(limit - used - 160 - len(node.name), 20)
            text, cut = _shown(value, budget, node.name, as_json)
            cache[key] = text
            if cut is not None:
                cache[key + ":cut"] = cut
        cut = cache.get(key + ":cut")
        if cut is not None:
            self.report.append({"kind": "truncated", "node_id": node.id, "reason": cut})
        return text

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
    def _build(self, max_images: int | None) -> list[tuple[str, list[dict[str, Any]], Any]]:
        turns: list[tuple[str, list[dict[str, Any]], str | None, Any]] = []
        if self.system:
            turns.append(("system", [{"type": "text", "text": self.system}], None, None))
        results = {
            (n.meta["asked_by"], n.meta["tool_call_id"]): n
            for n in self.nodes
            if n.kind == "code" and "tool_call_id" in n.meta and "asked_by" in n.meta
        }
        answered: set[str] = set()
        for node, line in zip(self.nodes, self._lines, strict=True):
            if node.id in answered:
                continue
            if node.kind != "llm":
                turns.append(("user", [{"type": "text", "text": line}], node.id, None))
                continue
            turns.append(("user", _parts(node.input, self._cut, node.id), node.id, None))
            calls: list[dict[str, Any]] = node.meta.get("tool_calls") or []
            answers = self._answers(node, calls, results) if calls else None
            if answers is not None:  # the provider's shape: the calls, then each result
                text = self._cut(str(node.output or ""), node.id)
                parts = [{"type": "text", "text": text}] if text else []
                extra = {"tool_calls": [_openai_call(call) for call in calls]}
                turns.append(("assistant", parts, node.id, extra))
                for call, answer in zip(calls, answers, strict=True):
                    answered.add(answer.id)
                    result = {"type": "text", "text": self._tool_text(answer)}
                    turns.append(("tool", [result], answer.id, {"tool_call_id": call["id"]}))
            elif node.output is not None or calls:
                reply = self._cut(_reply_text(node), node.id)
                turns.append(("assistant", [{"type": "text", "text": reply}], node.id, None))
        self._retain_images(turns, max_images)
        if self.content is not None:
            turns.append(("user", _parts(self.content, None, None), None, None))
        merged: list[tuple[str, list[dict[str, Any]], Any]] = []
        for role, parts, _, extra in turns:
            if not parts and extra is None:
                continue
            previous = merged[-1] if merged else None
            if (
                previous is not None
                and previous[0] == role
                and role != "system"
                and extra is None
                and previous[2] is None
            ):
                previous[1].extend(parts)
            else:
                merged.append((role, list(parts), extra))
        return merged

    def _answers(
        self, node: Node, calls: list[dict[str, Any]], results: dict[tuple[str, str], Node]
    ) -> list[Node] | None:
        """The finished, visible result node of each of `node`'s tool calls; None when
        one is missing (then the calls show as text and the results as lines)."""
        answers = []
        for call in calls:
            answer = results.get((node.id, str(call.get("id"))))
            if answer is None or answer.id in self._stack_ids or not self._walk.done(answer):
                return None
            answers.append(answer)
        return answers

    def _tool_text(self, node: Node) -> str:
        """What a tool message tells the model: the result, or the error."""
        if node.status == "completed":
            return self._output(node, 0, as_json=False)
        return f"error: {node.error or node.status}"

    def _retain_images(
        self, turns: list[tuple[str, list[dict[str, Any]], str | None, Any]], keep: int | None
    ) -> None:
        """Keep the newest `keep` history images; older ones become placeholders."""
        if keep is None:
            return
        seen = 0
        for _, parts, node_id, _ in reversed(turns):
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
            self._messages = [
                _message(role, parts, self.dag, extra)
                for (role, parts), extra in zip(self._parts, self._extras, strict=True)
            ]
        return self._messages

    def _display_turns(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """(label, parts) per message for views: tool calls as text lines, and a tool
        result labelled with its call id."""
        turns = []
        for (role, parts), extra in zip(self._parts, self._extras, strict=True):
            if extra and "tool_calls" in extra:
                asked = [
                    f"→ {c['function']['name']}({c['function']['arguments']})  [{c['id']}]"
                    for c in extra["tool_calls"]
                ]
                parts = [*parts, {"type": "text", "text": "\n".join(asked)}]
            elif extra and "tool_call_id" in extra:
                role = f"tool [{extra['tool_call_id']}]"
            turns.append((role, parts))
        return turns

    @property
    def messages_hash(self) -> str:
        """sha256 of the messages with images by hash: equal renders, equal hashes."""
        canonical = [
            [role, [_canonical_part(p) for p in parts], *([extra] if extra else [])]
            for (role, parts), extra in zip(self._parts, self._extras, strict=True)
        ]
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
        return _view("context")(self)


_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)


def _json(value: Any) -> str:
    return _ENCODER.encode(value)


def _reply_text(node: Node) -> str:
    """An llm node's reply as a line: the text, then the tool calls it asked for."""
    text = "" if node.output is None else str(node.output)
    calls = node.meta.get("tool_calls")
    if not calls:
        return text
    asked = ", ".join(f"{c.get('name')}({_arguments(c.get('arguments'))})" for c in calls)
    return f"{text} [calls {asked}]" if text else f"[calls {asked}]"


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": _arguments(call.get("arguments", {}))},
    }


def _shown(value: Any, budget: int | None, name: str, as_json: bool) -> tuple[str, str | None]:
    """`value` as text (JSON, or a plain string for a tool message), cut to `budget`
    characters at whole list items or dict entries where it can, saying what was cut;
    and what was cut, for the report (None when nothing was)."""
    text = value if isinstance(value, str) and not as_json else _json(value)
    if budget is None or len(text) <= budget:
        return text, None
    hint = f"set render_output= on {name} to choose what later calls see"
    if isinstance(value, (list, dict)) and value:
        items = list(value.items()) if isinstance(value, dict) else list(value)
        kept, size = 0, 2
        for item in items:
            piece = len(_json(dict([item]) if isinstance(value, dict) else [item]))
            if size + piece > budget:
                break
            size, kept = size + piece, kept + 1
        if kept:
            part = dict(items[:kept]) if isinstance(value, dict) else items[:kept]
            shown = _json(part)[:-1] + ", …" + _closing(value)
            what = "entries" if isinstance(value, dict) else "items"
            cut = (
                f"output: showing {kept} of {len(items)} {what}, "
                f"{len(text) - len(shown)} of {len(text)} characters left out"
            )
            return f"{shown} [cut: {cut}; {hint}]", cut
    cut = f"output: {len(text) - budget} of {len(text)} characters left out"
    return f"{text[:budget]}… [cut: {cut}; {hint}]", cut


def _closing(value: Any) -> str:
    return "}" if isinstance(value, dict) else "]"


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


def _message(
    role: str, parts: list[dict[str, Any]], dag: ContextDAG, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    if extra:  # a tool call or a tool result: text only, in the provider's shape
        text = "\n".join(str(p.get("text", "")) for p in parts if p["type"] == "text")
        return {"role": role, "content": text or None, **extra}
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
