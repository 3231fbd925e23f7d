"""What an LLM call sees: render_context and RenderedContext.

Owns the choice of nodes for a range (DESIGN.md §4; the rules node by node are
_walk.py's), the token budget's window, what llm nodes record of a render, and
recorded reports. Reads the DAG, never writes it. A windowed render walks the stack
and, newest first, only the siblings it needs; a full-range one extends the last
render's history with what was made since (_history.py). Start at render_context().
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import Any

from openprogram.core.dag import ContextDAG
from openprogram.core.image import ImageRef
from openprogram.core.node import Node, RenderRange, by_seq, check_render_range, registered_view
from openprogram.errors import UsageError
from openprogram.render._compact import Fitted, fit
from openprogram.render._history import History, Settings, build_history, render_history
from openprogram.render._messages import Message, Writer, chat_message, content_parts
from openprogram.render._tokens import counter
from openprogram.render._walk import SHOW_SELF, RenderWalk

__all__ = ["RenderedContext", "recorded_report", "render_context", "seen_by"]

_DEFAULT_RANGE = RenderRange()


def render_context(
    dag: ContextDAG,
    frame: str | None = None,
    render_range: RenderRange | dict[str, Any] | None = None,
    before: int | None = None,
    *,
    content: object = None,
    system: str | None = None,
    max_images: int | None = 3,
    max_line_chars: int | None = 20_000,
    include: Sequence[str] = (),
    tokens_model: str | None = None,
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
    tokens_model: the model whose tokenizer counts a `{"tokens": N}` budget (litellm's
        counter for litellm names; an estimate for offline models and None).
    """
    frame_node = dag.get(frame) if frame is not None else None
    if frame is not None and frame_node is None:
        raise UsageError(f"frame {frame!r} is not a node of this DAG")
    if frame_node is not None and frame_node.kind != "code":
        raise UsageError(f"frame {frame!r} is a {frame_node.kind} node; frames are code nodes")
    window = _range(render_range, frame_node)
    stack = [*dag.ancestors(frame_node)[::-1], frame_node] if frame_node else []
    walk = RenderWalk(dag, before, stack[0].branch if stack else dag.branch, stack)
    settings = Settings(
        walk.branch,
        "\n\n".join(s for s in (system, frame_node.system if frame_node else None) if s),
        max_images,
        max_line_chars,
        before is None,
    )

    def visible() -> tuple[list[Node], set[str]]:
        return _visible(walk, frame_node, window, include)

    fitted = None
    if window.tokens is not None:
        fitted, extra_ids = _fit(walk, stack, settings, window, frame_node, include, tokens_model)
        history = build_history(walk, stack, settings, fitted.nodes, extra_ids)
    elif window.callers is None and window.subcalls == -1:
        history = render_history(walk, stack, settings, include, visible)
    else:
        history = build_history(walk, stack, settings, *visible())
    return RenderedContext(dag, frame_node, history, content=content, fitted=fitted)


def _fit(
    walk: RenderWalk,
    stack: list[Node],
    settings: Settings,
    window: RenderRange,
    frame_node: Node | None,
    include: Sequence[str],
    tokens_model: str | None,
) -> tuple[Fitted, set[str]]:
    """The visible nodes fitted to the window's token budget (DESIGN.md §4 "Compaction"),
    and which of them only `include` shows. Newest first: a window of pre-frame nodes
    that grows until the budget is spent or the history is whole, so the cost follows
    what is shown, not the run's length."""
    assert window.tokens is not None
    horizon = walk.before if walk.before is not None else walk.dag.newest_seq + 1
    key = (
        frame_node.id if frame_node is not None else None,
        horizon,
        window.as_dict().items(),
        tokens_model,
        (settings.branch, settings.system, settings.max_images, settings.max_line_chars),
        tuple(include),
    )
    memo = _fits.get(walk.dag)
    if memo is not None and memo[0] == key:  # the runtime's look before this call's render
        return memo[1], memo[2]
    writer = Writer(walk, {n.id for n in stack}, settings.max_line_chars)
    shown_stack = [n for n in stack if n is not frame_node and n.expose in SHOW_SELF]
    protected = {n.id for n in stack} | set(include)

    def usable(summary: Node) -> bool:
        if not walk.exists(summary) or summary.status != "completed" or not walk.done(summary):
            return False
        top = walk.dag.top_level_ancestor(summary) if summary.parent is not None else summary
        return walk.on_branch(top)

    def horizon_of(node: Node) -> bool:  # a pre-frame node: older than the frame
        return frame_node is None or node.seq < frame_node.seq

    def everything() -> list[Node]:
        return _visible(walk, frame_node, window, include)[0]

    name = frame_node.name if frame_node is not None else None
    windows = _windows.setdefault(walk.dag, {})
    limit = windows.get((name, window.tokens), _FIRST_WINDOW)
    while True:
        callers = limit if window.callers is None else min(limit, window.callers)
        nodes, extra_ids = _visible(
            walk, frame_node, window.model_copy(update={"callers": callers}), include
        )
        seen = {n.id for n in nodes}
        missing = [n for n in shown_stack if n.id not in seen]
        if missing:  # the stack's call lines always show, however far back
            nodes = sorted([*nodes, *missing], key=lambda n: n.seq)
        earlier = sum(1 for n in nodes if horizon_of(n)) - len(missing)
        whole = earlier < callers or callers == window.callers
        fitted = fit(
            walk,
            writer,
            nodes,
            protected,
            budget=window.tokens,
            keep=window.keep,
            count=counter(tokens_model),
            max_images=settings.max_images,
            usable=usable,
            whole=whole,
            everything=everything,
        )
        if whole or fitted.implicit:
            # the next render of this function starts with about what this one needed
            needed = sum(1 for n in fitted.nodes if horizon_of(n) and n.id not in protected)
            windows[(name, window.tokens)] = max(needed + needed // 4 + 4, _FIRST_WINDOW)
            _fits[walk.dag] = (key, fitted, extra_ids)
            return fitted, extra_ids
        limit *= 2


_FIRST_WINDOW = 16  # pre-frame nodes a budgeted render looks at first
_windows: weakref.WeakKeyDictionary[ContextDAG, dict[Any, int]] = weakref.WeakKeyDictionary()
_fits: weakref.WeakKeyDictionary[ContextDAG, Any] = weakref.WeakKeyDictionary()


def _visible(
    walk: RenderWalk, frame_node: Node | None, window: RenderRange, include: Sequence[str]
) -> tuple[list[Node], set[str]]:
    """The visible nodes in seq order, and which of them only `include` shows."""
    in_frame: list[Node] = []
    if frame_node is not None and walk.dag.children_view(frame_node.id):
        in_frame = walk.collect(
            walk.children(frame_node.id, None),
            window.subcalls,
            [(frame_node.id, None)],
        )
    levels: list[tuple[str | None, int | None]] = [(n.parent, n.seq) for n in walk.stack]
    levels = levels or [(None, None)]
    pre_frame = walk.collect(walk.pre_frame_roots(frame_node), window.callers, levels)

    visible = pre_frame
    if frame_node is not None and frame_node.expose in SHOW_SELF:
        visible = [*pre_frame, frame_node]
    visible.extend(in_frame)
    extra_ids: set[str] = set()
    if include:
        shown = {n.id for n in visible}
        for node_id in include:
            node = walk.dag.get(node_id)
            if node_id not in shown and node is not None and walk.exists(node):
                visible.append(node)
                shown.add(node_id)
                extra_ids.add(node_id)
    visible.sort(key=by_seq)
    return visible, extra_ids


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
        tokens_model=llm_node.meta.get("model"),
    )


def recorded_report(dag: ContextDAG, node: Node | str) -> list[dict[str, Any]]:
    """The render report recorded on llm node `node`: what its render left out or
    shortened, as `RenderedContext.report` listed it.

    llm() stores on each node only the entries an earlier one does not hold: its
    `meta["report"]`, and in `meta["report_base"]` `[node id, count]` when the oldest
    `count` omitted-image entries are that node's (so a long run with images stores
    O(n), not O(n²)). A base missing from the DAG (a damaged store) leaves them out.
    """
    current = dag.node(node) if isinstance(node, str) else node
    compacted: list[dict[str, Any]] = []
    if current.meta.get("compacted"):  # stored as counts: rebuilt from the render
        fitted = seen_by(dag, current).fitted
        compacted = fitted.report() if fitted is not None else []
    own = [*(current.meta.get("report") or ()), *compacted]
    entries = [entry for entry in own if entry.get("kind") != "omitted"]
    entries.extend(entry for entry in own if entry.get("kind") == "omitted")
    base = current.meta.get("report_base")
    wanted = int(base[1]) if base else 0  # the oldest omitted entries, held by the base
    while base and wanted > 0:
        holder = dag.get(base[0])
        if holder is None:
            break
        older = [e for e in holder.meta.get("report") or () if e.get("kind") == "omitted"]
        base = holder.meta.get("report_base")
        inherited = min(int(base[1]) if base else 0, wanted)
        # its omitted entries, oldest first: its base's, then its own (stored newest first)
        if wanted > inherited:
            entries.extend(older[max(len(older) - (wanted - inherited), 0) :])
        wanted = inherited
    return entries


def _range(value: RenderRange | dict[str, Any] | None, frame: Node | None) -> RenderRange:
    if value is None:
        return (frame.render_range if frame is not None else None) or _DEFAULT_RANGE
    if isinstance(value, RenderRange):
        return value
    return check_render_range(value) or _DEFAULT_RANGE


class RenderedContext:
    """The result of a render: visible nodes, chat messages, report and text lines."""

    def __init__(
        self,
        dag: ContextDAG,
        frame: Node | None,
        history: History,
        *,
        content: Any,
        fitted: Fitted | None = None,
    ) -> None:
        self.dag = dag
        self.fitted = fitted  # with a token budget: what it kept, covered and dropped
        self.frame = frame
        self._history = history
        self._nodes = history.nodes  # shared with the cache: handed out as copies
        self.system = history.settings.system
        self.content = content
        self._text = history.text
        self._text_length = history.text_length
        self._ids = history.ids
        self._stream = history.stream
        self._current = content_parts(content, None, None) if content is not None else []
        self._hash = self._stream.digest_with("user", self._current)
        self._turns: list[Message] | None = None
        self._messages: list[dict[str, Any]] | None = None

    def _merged(self) -> list[Message]:
        """The messages: the history's, with the current content merged in last."""
        if self._turns is None:
            self._turns = self._stream.with_turn("user", self._current)
        return self._turns

    @functools.cached_property
    def report(self) -> list[dict[str, Any]]:
        """What the render left out or shortened besides the visibility rules (built on
        first use: a long run with images omits more with every step)."""
        report = self._history.report()
        if self.fitted is not None:
            report.extend(self.fitted.report())
        return report

    @functools.cached_property
    def nodes(self) -> list[Node]:
        """The visible nodes, in seq order."""
        return self._nodes.tolist()

    @property
    def reads(self) -> list[str]:
        """The ids of the visible nodes, in seq order."""
        return self._ids.tolist()

    def record_on(self, node: Node) -> None:
        """Note on llm node `node` what this render read, its hash and its report (only
        the entries an earlier node does not hold: see recorded_report); the runtime
        does, for the exchange that sends these messages."""
        node.reads = self._ids.tolist()  # a list of its own (DESIGN §2: list[str])
        node.messages_hash = self._hash
        node.system = self.system or None
        own, base = self._history.own_report()
        if own:
            node.meta["report"] = own
        fitted = self.fitted
        if fitted is not None and (fitted.covered or fitted.dropped or fitted.implicit):
            # what compaction left out, in O(1): recorded_report lists it node by node
            node.meta["compacted"] = {
                "summary": fitted.summary.id if fitted.summary is not None else None,
                "covered": len(fitted.covered),
                "dropped": len(fitted.dropped),
                "older": fitted.implicit,  # every visible node older than those is left out
                "tokens": fitted.tokens,
            }
        if base is not None:
            node.meta["report_base"] = list(base)
        self._history.recorded_on = node.id

    def text(self) -> str:
        """One line per visible node, in seq order."""
        return self._text()

    def text_length(self) -> int:
        """len(self.text()), without building the text of a long history."""
        return self._text_length()

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat in litellm/OpenAI format, images as PNG data URLs."""
        if self._messages is None:
            self._messages = [
                chat_message(role, parts, self.dag, extra) for role, parts, extra in self._merged()
            ]
        return self._messages

    def display_turns(self) -> list[tuple[str, list[dict[str, Any]]]]:
        """(label, parts) per message for views: tool calls as text lines, and a tool
        result labelled with its call id."""
        turns = []
        for role, parts, extra in self._merged():
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
        return self._hash

    def images(self) -> list[ImageRef]:
        """The image references that are sent, in order."""
        merged = self._merged()
        return [p["image"] for _, parts, _ in merged for p in parts if p.get("type") == "image"]

    def __repr__(self) -> str:
        return f"RenderedContext(nodes={len(self._nodes)}, messages={len(self._merged())})"

    def _repr_html_(self) -> str:
        return registered_view("context")(self)
