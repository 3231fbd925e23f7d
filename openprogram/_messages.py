"""The pieces a render is made of: lines' text, message parts, chat messages and the
messages hash, fed one message at a time.

Pure functions of values and nodes; render.py decides what is shown, _history.py puts
the pieces together. Start at MessageStream.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from openprogram.dag import ContextDAG, Node
from openprogram.image import ImageRef
from openprogram.values import replace_surrogates

Message = tuple[str, list[dict[str, Any]], dict[str, Any] | None]
"""(role, parts, extra): one chat message before it is put in the provider's shape."""

_ENCODER = json.JSONEncoder(ensure_ascii=False, default=str)
_CANONICAL = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


class MessageStream:
    """Messages built turn by turn, merging adjacent turns of one role, with the sha256
    of their canonical JSON kept up to date as they grow.

    The hash equals sha256 of `json.dumps(canonical, ensure_ascii=False,
    sort_keys=True)`: the JSON is written piece by piece, and the last message is left
    open so that a later turn can still merge into it. `copy()` forks the stream.
    """

    def __init__(self) -> None:
        self.messages: list[Message] = []
        self.hash = hashlib.sha256(b"[")

    def copy(self) -> MessageStream:
        """A stream that continues from here; this one is left as it is."""
        other = MessageStream.__new__(MessageStream)
        other.messages = list(self.messages)
        if other.messages:  # the open message grows in the copy only
            role, parts, extra = other.messages[-1]
            other.messages[-1] = (role, list(parts), extra)
        other.hash = self.hash.copy()
        return other

    def restore(self, messages: list[Message], count: int, last: int, state: Any) -> None:
        """Continue from an earlier point of another stream: its first `count` messages,
        the last of them with its first `last` parts, and its hash state then."""
        self.messages = messages[:count]
        if count:
            role, parts, extra = self.messages[-1]
            self.messages[-1] = (role, parts[:last], extra)
        self.hash = state.copy()

    def add(self, role: str, parts: list[dict[str, Any]], extra: dict[str, Any] | None) -> None:
        """Append one turn: merged into the last message when both are plain turns of
        the same role (never system), else a message of its own; empty turns vanish."""
        if not parts and extra is None:
            return
        messages = self.messages
        previous = messages[-1] if messages else None
        if (
            previous is not None
            and previous[0] == role
            and role != "system"
            and extra is None
            and previous[2] is None
        ):
            previous[1].extend(parts)
            self._feed("".join(", " + _canonical(p) for p in parts))
            return
        opening = f"[{_CANONICAL.encode(role)}, [" + ", ".join(_canonical(p) for p in parts)
        self._feed(opening if previous is None else _closing_of(previous) + ", " + opening)
        messages.append((role, list(parts), extra))

    def digest(self) -> str:
        """The hex sha256 of the messages as they stand (the stream stays open)."""
        state = self.hash.copy()
        tail = (_closing_of(self.messages[-1]) if self.messages else "") + "]"
        state.update(tail.encode("utf-8", "surrogatepass"))
        return state.hexdigest()

    def digest_with(self, role: str, parts: list[dict[str, Any]]) -> str:
        """The digest after one more plain turn, leaving this stream as it is: the parts
        of the open message are not copied (they only matter to merging, not to the hash)."""
        other = MessageStream.__new__(MessageStream)
        other.messages = [(m[0], [], m[2]) for m in self.messages[-1:]]
        other.hash = self.hash.copy()
        other.add(role, parts, None)
        return other.digest()

    def _feed(self, text: str) -> None:
        # surrogatepass: lone surrogates (a filename decoded with surrogateescape) hash
        # too, and every other text hashes to the same bytes as plain utf-8
        self.hash.update(text.encode("utf-8", "surrogatepass"))


def _closing_of(message: Message) -> str:
    extra = message[2]
    return "]]" if not extra else "], " + _CANONICAL.encode(extra) + "]"


def _canonical(part: dict[str, Any]) -> str:
    if part.get("type") == "image":
        return _CANONICAL.encode({"image": part["image"].sha256})
    return _CANONICAL.encode(part)


def json_text(value: Any) -> str:
    return _ENCODER.encode(value)


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


def shown(value: Any, budget: int | None, name: str, as_json: bool) -> tuple[str, str | None]:
    """`value` as text (JSON, or a plain string for a tool message), cut to `budget`
    characters at whole list items or dict entries where it can, saying what was cut;
    and what was cut, for the report (None when nothing was)."""
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


def content_parts(content: Any, cut: Any, node_id: str | None) -> list[dict[str, Any]]:
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
