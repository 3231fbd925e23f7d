"""The pieces a render is made of: lines' text, message parts, chat messages and the
messages hash, fed one message at a time.

Writer turns visible nodes into lines and turns (outputs as later calls see them, tool
calls in the provider's shape); render.py decides what is shown, _history.py puts the
pieces together. Start at Writer and MessageStream.
"""

from __future__ import annotations

import hashlib
import json
import weakref
from collections.abc import Callable, Iterable, Sequence
from json.encoder import encode_basestring
from typing import Any, Protocol

from openprogram.core import _secrets
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.image import ImageRef
from openprogram.core.values import as_shown, replace_surrogates, shown_json
from openprogram.render._chunks import Chunks


class HashState(Protocol):
    """A messages hash as the stream feeds it (hashlib.sha256's object)."""

    def update(self, data: bytes, /) -> None: ...
    def copy(self) -> HashState: ...
    def hexdigest(self) -> str: ...


class Walk(Protocol):
    """What the history needs of render.py's view of the DAG."""

    dag: ContextDAG
    before: int | None

    def done(self, node: Node) -> bool: ...

    def exists(self, node: Node) -> bool: ...

    def shows(self, node: Node) -> bool: ...

    def since(self, floor: int) -> list[Node]: ...


Turn = tuple[str, list[dict[str, Any]], str | None, dict[str, Any] | None]
"""(role, parts, id of the node it shows, extra) before adjacent turns merge."""


Entry = tuple[str, list[dict[str, Any]], dict[str, Any] | None, str | None]
"""(role, parts, extra, canon): a turn as MessageStream.add takes it; `canon` is its
parts' canonical JSON joined by ", " (None: made when added)."""


Message = tuple[str, list[dict[str, Any]], dict[str, Any] | None]
"""(role, parts, extra): one chat message before it is put in the provider's shape."""

_Open = tuple[str, "Chunks[dict[str, Any]]", "dict[str, Any] | None"]  # a message, growing

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


class MessageStream:
    """Messages built turn by turn, merging adjacent turns of one role, with the sha256
    of their canonical JSON kept up to date as they grow.

    The hash equals sha256 of `json.dumps(canonical, ensure_ascii=False,
    sort_keys=True)`: the JSON is written piece by piece (a turn's parts may come with
    their canonical JSON already made: _pieces.py keeps it), and the last message is
    left open so that a later turn can still merge into it. When `continued`, parts are
    kept in Chunks, so a later stream continues from any earlier point without copying
    them all; else in plain lists, faster to grow and read.
    """

    def __init__(self, *, continued: bool = True, hashed: bool = True) -> None:
        self.messages: Chunks[_Open] | list[_Open] = Chunks() if continued else []
        self.hash: HashState = hashlib.sha256(b"[")
        self._pending: list[str] = []  # canonical JSON not fed to the hash yet
        self.hashed = hashed  # False: only the messages are wanted (with_turn)

    def restore(self, stream: MessageStream, count: int, last: int, state: HashState) -> None:
        """Continue from an earlier point of `stream`: its first `count` messages, the
        last of them with its first `last` parts, and its hash state then."""
        if not count:
            self.messages = Chunks()
        else:
            assert isinstance(stream.messages, Chunks)  # only continued streams are restored
            self.messages = stream.messages.prefix(count - 1)
            role, parts, extra = stream.messages[count - 1]
            self.messages.append((role, parts.prefix(last), extra))
        self.hash = state.copy()
        self._pending = []

    def add(
        self,
        role: str,
        parts: list[dict[str, Any]],
        extra: dict[str, Any] | None,
        canon: str | None = None,
    ) -> None:
        """Append one turn: merged into the last message when both are plain turns of
        the same role (never system), else a message of its own; empty turns vanish.
        `canon`: the parts' canonical JSON joined by ", ", when known."""
        self.add_all(((role, parts, extra, canon),))

    def add_all(self, entries: Iterable[Entry]) -> None:
        """add() each of `entries`."""
        messages, pending, hashed = self.messages, self._pending, self.hashed
        previous = messages[-1] if messages else None
        # the role a plain turn merges into the last message with (None: none does)
        merging = None
        if previous is not None and previous[2] is None and previous[0] != "system":
            merging = previous[0]
        for role, parts, extra, canon in entries:
            if extra is None:
                if not parts:
                    continue
                if role == merging:
                    assert previous is not None
                    previous[1].extend(parts)
                    if hashed:
                        pending.append(", " + (canon or _joined(parts)))
                    continue
            if hashed:
                joined = _joined(parts) if canon is None else canon
                opening = f"[{_CANONICAL.encode(role)}, [" + joined
                if previous is not None:
                    opening = _closing_of(previous) + ", " + opening
                pending.append(opening)
            if isinstance(messages, Chunks):  # a later stream may continue from here
                chunks: Chunks[dict[str, Any]] = Chunks()
                chunks.extend(parts)
                previous = (role, chunks, extra)
            else:
                previous = (role, list(parts), extra)  # type: ignore[assignment]
            messages.append(previous)  # type: ignore[arg-type]
            merging = role if extra is None and role != "system" else None

    def state(self) -> HashState:
        """A copy of the hash state as the messages stand (the last one still open)."""
        if self._pending:
            # surrogatepass: lone surrogates (a filename decoded with surrogateescape) hash
            # too, and every other text hashes to the same bytes as plain utf-8
            self.hash.update("".join(self._pending).encode("utf-8", "surrogatepass"))
            self._pending = []
        return self.hash.copy()

    def digest(self) -> str:
        """The hex sha256 of the messages as they stand (the stream stays open)."""
        state = self.state()
        tail = (_closing_of(self.messages[-1]) if self.messages else "") + "]"
        state.update(tail.encode("utf-8", "surrogatepass"))
        return str(state.hexdigest())

    def digest_with(self, role: str, parts: list[dict[str, Any]]) -> str:
        """The digest after one more plain turn, leaving this stream as it is."""
        other = MessageStream()
        if self.messages:
            last_role, _, extra = self.messages[-1]
            other.messages.append((last_role, Chunks(), extra))
        other.hash = self.state()
        other.add(role, parts, None)
        return other.digest()

    def with_turn(self, role: str, parts: list[dict[str, Any]]) -> list[Message]:
        """The messages as lists, after one more plain turn; this stream stays as it is."""
        other = MessageStream(hashed=False)
        other.messages.extend(
            [
                (r, p.prefix(len(p)) if isinstance(p, Chunks) else list(p), e)
                for r, p, e in self.messages
            ]
        )
        other.add(role, parts, None)
        return [(r, list(p), e) for r, p, e in other.messages]


def _closing_of(message: tuple[str, Any, dict[str, Any] | None]) -> str:
    extra = message[2]
    return "]]" if not extra else "], " + _CANONICAL.encode(extra) + "]"


def _joined(parts: list[dict[str, Any]]) -> str:
    return ", ".join([canonical(p) for p in parts])


def canonical(part: dict[str, Any]) -> str:
    """A message part as the messages hash writes it (an image by its hash)."""
    text = part.get("text")
    if len(part) == 2 and part.get("type") == "text" and type(text) is str:
        # what _CANONICAL writes for a text part, without walking a dict (the common case)
        return '{"text": ' + encode_basestring(text) + ', "type": "text"}'
    return _CANONICAL.encode(_canonical_value(part))


def _canonical_value(part: dict[str, Any]) -> Any:
    if part.get("type") == "image":
        return {"image": part["image"].sha256}
    return part


def json_text(value: object) -> str:
    return _ENCODER.encode(value)


def value_text(value: object) -> str:
    """A stored value as a line shows it: objects by their fields (values.as_shown)."""
    return shown_json(value, _ENCODER.encode)


def reply_text(node: Node) -> str:
    """An llm node's reply as a line: the text, then the tool calls it asked for."""
    text = "" if node.output is None else str(node.output)
    calls = node.meta.get("tool_calls")
    if not calls:
        return text
    asked = ", ".join(f"{c.get('name')}({_arguments(c.get('arguments'))})" for c in calls)
    return f"{text} [calls {asked}]" if text else f"[calls {asked}]"


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json_text(value)


def openai_call(call: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call["id"],
        "type": "function",
        "function": {"name": call["name"], "arguments": _arguments(call.get("arguments", {}))},
    }


def shown(value: object, budget: int | None, name: str, as_json: bool) -> tuple[str, str | None]:
    """`value` as text (JSON, or a plain string for a tool message), cut to `budget`
    characters at whole list items or dict entries where it can, saying what was cut;
    and what was cut, for the report (None when nothing was)."""
    text = value if isinstance(value, str) and not as_json else json_text(value)
    if not isinstance(value, str) and ('"$type":' in text or '"$opaque":' in text):
        value = as_shown(value)  # objects by their fields, as the line format shows them
        text = value if isinstance(value, str) and not as_json else json_text(value)
    if budget is None or len(text) <= budget:
        return text, None
    hint = f"set render_output= on {name} to choose what later calls see"
    if isinstance(value, (list, dict)) and value:
        items = list(value.items()) if isinstance(value, dict) else list(value)
        kept, size = 0, 2
        for item in items:
            piece = len(json_text(dict([item]) if isinstance(value, dict) else [item]))
            if size + piece > budget:
                break
            size, kept = size + piece, kept + 1
        if kept:
            part = dict(items[:kept]) if isinstance(value, dict) else items[:kept]
            text_shown = json_text(part)[:-1] + ", …" + ("}" if isinstance(value, dict) else "]")
            what = "entries" if isinstance(value, dict) else "items"
            cut = (
                f"output: showing {kept} of {len(items)} {what}, "
                f"{len(text) - len(text_shown)} of {len(text)} characters left out"
            )
            return f"{text_shown} [cut: {cut}; {hint}]", cut
    cut = f"output: {len(text) - budget} of {len(text)} characters left out"
    return f"{text[:budget]}… [cut: {cut}; {hint}]", cut


def content_parts(
    content: str | Sequence[object] | None,
    cut: Callable[[str, str | None], str] | None,
    node_id: str | None,
) -> list[dict[str, Any]]:
    """Content (a str or a list of parts with ImageRefs) as internal message parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": cut(content, node_id) if cut else content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image":
            image_part = {"type": "image", "image": part["image"]}
            if part.get("description"):
                image_part["description"] = part["description"]
            parts.append(image_part)
        elif isinstance(part, dict) and part.get("type") == "text":
            text = str(part.get("text", ""))
            parts.append({"type": "text", "text": cut(text, node_id) if cut else text})
        else:
            parts.append({"type": "text", "text": str(part)})
    return parts


def chat_message(
    role: str, parts: list[dict[str, Any]], dag: ContextDAG, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One message in litellm/OpenAI format, images as PNG data URLs."""
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


def tool_images(node: Node, call_id: str) -> list[dict[str, Any]]:
    """The images a completed tool call returned (ImageRefs anywhere in its output), as
    the parts of the user message that follows the tool messages: a line naming the call,
    then the image (its part keeps the tool node's id, for the report of images dropped).
    A tool message holds only text (OpenAI's format), so the model sees them there."""
    if node.status != "completed":
        return []
    parts: list[dict[str, Any]] = []
    for ref in _image_refs(node.output):
        text = f"[{node.name} (tool call {call_id}) returned this image: {ref}]"
        parts.append({"type": "text", "text": text})
        parts.append({"type": "image", "image": ref, "node": node.id})
    return parts


def _image_refs(value: Any) -> Iterable[ImageRef]:
    if isinstance(value, ImageRef):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _image_refs(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _image_refs(item)


_texts: weakref.WeakKeyDictionary[ContextDAG, dict[str, str]] = weakref.WeakKeyDictionary()
"""Each DAG's formatted io, by node id (inputs) and by id, form and line limit (outputs):
written once per node and reused by every render of the DAG; gone with the DAG."""


def _text_cache(dag: ContextDAG) -> dict[str, str]:
    cache = _texts.get(dag)
    if cache is None:
        cache = _texts.setdefault(dag, {})
    return cache


def forget_output(dag: ContextDAG, node_id: str) -> None:
    """Drop the cached text of a node's output (Writer.output's keys): it runs again."""
    outputs = f"{node_id}:"  # its input's text (keyed by the bare id) stays
    cache = _text_cache(dag)
    for key in [key for key in cache if key.startswith(outputs)]:
        cache.pop(key, None)


class Writer:
    """The text of visible nodes: lines (outputs as later calls see them) and turns."""

    def __init__(self, walk: Walk, stack_ids: set[str], max_line_chars: int | None) -> None:
        self.walk = walk
        self.dag = walk.dag
        self.texts = _text_cache(walk.dag)
        self.stack_ids = stack_ids
        self.max_line_chars = max_line_chars
        self.reports: list[dict[str, Any]] = []

    def line(self, node: Node) -> str:
        if node.kind == "user":
            line = f"user: {node.input}"
        elif node.kind == "llm":
            line = f"assistant: {reply_text(node)}"
        elif "covers" in node.meta:  # a compaction summary, in place of what it covers
            first, last = node.meta["covers"]
            output = self.output(node, 0, as_json=False) if node.status == "completed" else ""
            line = f"[summary of earlier history, seq {first}-{last}] {output}"
        else:
            cache = self.texts
            cached = cache.get(node.id)
            if cached is not None:
                line = cached
            else:  # inputs never change once recorded: format them once
                hidden = node.hidden_inputs
                inputs = node.input
                if hidden and isinstance(inputs, dict):
                    inputs = {key: v for key, v in inputs.items() if key not in hidden}
                line = f"[{node.name} #{self.dag.ordinal(node)}] input={value_text(inputs)}"
                cache[node.id] = line
            if node.id not in self.stack_ids and self.walk.done(node):
                if node.status == "completed":
                    line += " output=" + self.output(node, len(line), as_json=True)
                else:
                    line += f" error={node.error or node.status}"
        return self.cut(line, node.id)

    def output(self, node: Node, used: int, *, as_json: bool) -> str:
        """A completed code node's output as later calls see it: its render_output when
        it has one, cut to whole items (saying how much was left out) when too long."""
        cache = self.texts
        # the cut depends on the line limit, so renders with other limits keep their own
        key = f"{node.id}:{'out' if as_json else 'tool'}:{self.max_line_chars}"
        text = cache.get(key)
        if text is None:
            value = node.meta.get("render_output", node.output)
            limit = self.max_line_chars
            # room for the line so far and the note saying what was cut
            budget = None if limit is None else max(limit - used - 160 - len(node.name), 20)
            text, cut = shown(value, budget, node.name, as_json)
            cache[key] = text
            if cut is not None:
                cache[key + ":cut"] = cut
        cut = cache.get(key + ":cut")
        if cut is not None:
            self.reports.append({"kind": "truncated", "node_id": node.id, "reason": cut})
        return text

    def cut(self, text: str, node_id: str | None) -> str:
        limit = self.max_line_chars
        if limit is None or len(text) <= limit:
            return text
        reason = f"{len(text)} characters cut to {limit}"
        self.reports.append({"kind": "truncated", "node_id": node_id, "reason": reason})
        return text[:limit] + f"… [{len(text) - limit} characters truncated]"

    def turns(
        self, nodes: list[Node], lines: list[str], carried: set[str]
    ) -> list[tuple[list[Turn], tuple[str, ...], int]]:
        """Per node: its turns, the tool results they carry, and the report's length
        after them. Results already carried (`carried`, or by an earlier call) show none."""
        results = {
            (n.meta["asked_by"], n.meta["tool_call_id"]): n
            for n in nodes
            if n.kind == "code" and "tool_call_id" in n.meta and "asked_by" in n.meta
        }
        answered = set(carried)
        groups: list[tuple[list[Turn], tuple[str, ...], int]] = []
        for node, line in zip(nodes, lines, strict=True):
            turns: list[Turn] = []
            answers = None
            if node.id in answered:
                pass
            elif node.kind != "llm":
                turns.append(("user", [{"type": "text", "text": line}], node.id, None))
            else:
                turns.append(("user", content_parts(node.input, self.cut, node.id), node.id, None))
                calls: list[dict[str, Any]] = node.meta.get("tool_calls") or []
                answers = self.answers(node, calls, results) if calls else None
                if answers is not None:  # the provider's shape: the calls, then each result
                    text = self.cut(str(node.output or ""), node.id)
                    parts = [{"type": "text", "text": text}] if text else []
                    extra = {"tool_calls": [openai_call(call) for call in calls]}
                    turns.append(("assistant", parts, node.id, extra))
                    images: list[dict[str, Any]] = []
                    for call, answer in zip(calls, answers, strict=True):
                        answered.add(answer.id)
                        result = {"type": "text", "text": self.tool_text(answer)}
                        turns.append(("tool", [result], answer.id, {"tool_call_id": call["id"]}))
                        images.extend(tool_images(answer, str(call["id"])))
                    if images:  # a tool message carries text only: its images follow it
                        turns.append(("user", images, node.id, None))
                elif node.output is not None or calls:
                    reply = self.cut(reply_text(node), node.id)
                    turns.append(("assistant", [{"type": "text", "text": reply}], node.id, None))
            carried_ids = tuple(a.id for a in answers) if answers else ()
            groups.append((turns, carried_ids, len(self.reports)))
        return groups

    def answers(
        self, node: Node, calls: list[dict[str, Any]], results: dict[tuple[str, str], Node]
    ) -> list[Node] | None:
        """The finished, visible result node of each of `node`'s tool calls; None when
        one is missing (then the calls show as text and the results as lines)."""
        answers = []
        for call in calls:
            answer = results.get((node.id, str(call.get("id"))))
            if answer is None or answer.id in self.stack_ids or not self.walk.done(answer):
                return None
            answers.append(answer)
        return answers

    def tool_text(self, node: Node) -> str:
        """What a tool message tells the model: the result, or the error, with every
        known secret value masked as the store holds it (a command that printed the
        environment gives the model no key; a resumed run sees what the first one saw)."""
        if node.status == "completed":
            text = self.output(node, 0, as_json=False)
        else:
            text = f"error: {node.error or node.status}"
        return _secrets.scrub(text, patterns=False, refresh=False)
