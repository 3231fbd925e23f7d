"""Models: the protocol a model implements, the request it gets, and offline models.

Owns `Model`, `ModelRequest`, `ModelReply`, `ToolCall` and `ScriptedModel` (replies
from a list, a per-function dict or a callable; tool calls; replies streamed in chunks).
Provider models live in `_litellm.py`; `ReplayModel` answers from a recorded session
(`replay.py`).
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel

from openprogram.core.usage import Usage
from openprogram.errors import ScriptExhausted, UsageError

if TYPE_CHECKING:
    from openprogram.render.render import RenderedContext

__all__ = ["Model", "ModelReply", "ModelRequest", "ScriptedModel", "ToolCall", "reply_text"]

_MAX_YIELDS = 100


@dataclass
class ModelRequest:
    """One exchange about to be sent: the rendered context and who asks.

    `messages` is the chat in OpenAI format (images as data URLs, built on first use);
    callbacks may replace it. `text` is the text of the current llm() content. `tools`
    are the tools offered, in OpenAI format (`{"type": "function", "function": spec}`).
    """

    rendered: RenderedContext
    function: str | None
    node_id: str
    response_format: type[BaseModel] | None = None
    options: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] | None = None
    _messages: list[dict[str, Any]] | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        if self._messages is None:
            return self.rendered.messages
        return self._messages

    @messages.setter
    def messages(self, value: list[dict[str, Any]]) -> None:
        self._messages = value

    @property
    def text(self) -> str:
        content = self.rendered.content
        if isinstance(content, str):
            return content
        return "\n".join(
            str(p.get("text", ""))
            for p in content or ()
            if isinstance(p, dict) and p.get("type") == "text"
        )

    @property
    def history(self) -> str:
        """The rendered history as text lines (what the model sees before the content)."""
        return self.rendered.text()

    @property
    def images(self) -> list[Any]:
        """The current content's images as PIL images."""
        content = self.rendered.content
        if not isinstance(content, list):
            return []
        dag = self.rendered.dag
        return [
            dag.image(p["image"]).pil
            for p in content
            if isinstance(p, dict) and p.get("type") == "image"
        ]


@dataclass(frozen=True)
class ToolCall:
    """One tool call a model asked for: its id, the tool's name and the arguments.

    `arguments` is the decoded JSON object, or the raw text when the model sent
    something that is not a JSON object (the tool loop reports that back to it).
    """

    id: str
    name: str
    arguments: dict[str, Any] | str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ToolCall:
        return cls(str(value["id"]), str(value["name"]), value.get("arguments", {}))


@dataclass
class ModelReply:
    """What a model answered: the text, the tool calls it asks for (if any), its usage
    and the raw provider payload."""

    text: str
    usage: Usage = field(default_factory=Usage)
    raw: dict[str, Any] | None = None
    tool_calls: list[ToolCall] | None = None

    def provider_meta(self) -> dict[str, Any]:
        """What the provider said of its reply besides the text, from `raw`: the model
        that answered, the response id and each choice's finish reason ({} offline)."""
        raw = self.raw
        if not isinstance(raw, dict):
            return {}
        meta: dict[str, Any] = {}
        for key in ("model", "id"):
            if isinstance(raw.get(key), str):
                meta[key] = raw[key]
        reasons = [
            choice["finish_reason"]
            for choice in raw.get("choices") or ()
            if isinstance(choice, dict) and isinstance(choice.get("finish_reason"), str)
        ]
        if reasons:
            meta["finish_reasons"] = reasons
        return meta


@runtime_checkable
class Model(Protocol):
    """Anything that answers a ModelRequest, synchronously and asynchronously."""

    name: str

    def complete(self, request: ModelRequest) -> ModelReply: ...

    async def acomplete(self, request: ModelRequest) -> ModelReply: ...


Reply = Any  # str | dict | list | BaseModel | BaseException


class ScriptedModel:
    """An offline model that answers from a script, for tests and demos.

    replies: a list consumed in order; a dict `{function_name: [replies...]}` (key "*"
    serves any other function); or a callable `(ModelRequest) -> str | dict`. A dict,
    list or pydantic reply is sent as JSON; an exception instance is raised instead. A
    dict with a "tool_calls" key is a tool call reply: `{"tool_calls": [{"name": "add",
    "arguments": {"a": 2}}], "content": "optional text"}` (ids are `call_1`, `call_2`, ...
    unless given as "id"). Streamed, a reply comes in word-sized chunks.
    Every request is kept in `.requests`. Running out raises ScriptExhausted.
    Replies are taken in the order the requests are made. Under `allm` the reply comes
    only after every other task ready to run has run on until it waits (see
    yield_to_loop), so calls under `asyncio.gather` overlap as they do with a provider.
    """

    name = "scripted"

    def __init__(
        self,
        replies: Iterable[Reply] | Mapping[str, Iterable[Reply]] | Callable[[ModelRequest], Reply],
    ) -> None:
        self._lock = threading.Lock()
        self.requests: list[ModelRequest] = []
        self._callable: Callable[[ModelRequest], Reply] | None = None
        self._queue: deque[Reply] | None = None
        self._by_function: dict[str, deque[Reply]] | None = None
        if callable(replies) and not isinstance(replies, Mapping):
            self._callable = replies
        elif isinstance(replies, Mapping):
            self._by_function = {str(k): _reply_list(k, v) for k, v in replies.items()}
        elif isinstance(replies, (str, bytes)):
            raise UsageError(
                f"ScriptedModel({replies!r:.60}) wants a list of replies, not one string; "
                f"pass ScriptedModel([{replies!r:.60}])"
            )
        else:
            self._queue = _reply_list(None, replies)
        self._given = self.remaining
        self._call_ids = 0

    @property
    def remaining(self) -> int:
        """Replies not yet used (0 for a callable script)."""
        if self._queue is not None:
            return len(self._queue)
        if self._by_function is not None:
            return sum(len(q) for q in self._by_function.values())
        return 0

    def complete(self, request: ModelRequest) -> ModelReply:
        return self._answer(request, self._take(request))

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        reply = self._take(request)
        await yield_to_loop(request)
        return self._answer(request, reply)

    def _take(self, request: ModelRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            return self._next(request)

    def _answer(self, request: ModelRequest, reply: Reply) -> ModelReply:
        if isinstance(reply, BaseException):
            raise reply
        with self._lock:  # call ids count across threads
            tool_calls = self._tool_calls(reply)
        text = str(reply.get("content") or "") if tool_calls else reply_text(reply)
        return ModelReply(
            text=text,
            usage=Usage(
                input_tokens=_estimate_tokens(request),
                output_tokens=max(1, len(text) // 4),
                calls=1,
            ),
            tool_calls=tool_calls,
        )

    def stream(self, request: ModelRequest) -> Iterator[str | ModelReply]:
        """The reply in word-sized text chunks, then the whole ModelReply (usage)."""
        reply = self.complete(request)
        yield from _CHUNK.findall(reply.text)
        yield reply

    def _tool_calls(self, reply: Reply) -> list[ToolCall] | None:
        if not isinstance(reply, Mapping) or "tool_calls" not in reply:
            return None
        calls = reply["tool_calls"]
        if not isinstance(calls, list) or not calls:
            raise UsageError(
                f"a scripted tool_calls reply needs a non-empty list of "
                f"{{'name': ..., 'arguments': {{...}}}}, not {calls!r}"
            )
        found = []
        for call in calls:
            if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
                raise UsageError(
                    f"scripted tool call {call!r} needs a 'name' (str) and 'arguments' (dict)"
                )
            self._call_ids += 1
            arguments = call.get("arguments", {})
            found.append(
                ToolCall(
                    str(call.get("id") or f"call_{self._call_ids}"),
                    call["name"],
                    arguments if isinstance(arguments, (dict, str)) else str(arguments),
                )
            )
        return found

    def _next(self, request: ModelRequest) -> Reply:
        if self._callable is not None:
            return self._callable(request)
        asked = len(self.requests)
        if self._queue is not None:
            if not self._queue:
                raise ScriptExhausted(
                    f"ScriptedModel ran out of replies at request #{asked} (from "
                    f"{request.function!r}); it was given {self._given}. Add replies to the "
                    "script, or check why the program asks more often than expected.",
                    node_id=request.node_id,
                )
            return self._queue.popleft()
        assert self._by_function is not None
        function = request.function or ""
        queue = self._by_function.get(function)
        if queue is None:
            queue = self._by_function.get("*")
        if queue is None:
            raise ScriptExhausted(
                f"ScriptedModel has no replies for function {function!r}; the script names "
                f"{sorted(self._by_function)!r}. Add a {function!r} entry or a '*' entry.",
                node_id=request.node_id,
            )
        if not queue:
            raise ScriptExhausted(
                f"ScriptedModel ran out of replies for {function!r}. Add replies to its "
                "list, or check why it is called more often than expected.",
                node_id=request.node_id,
            )
        return queue.popleft()


async def yield_to_loop(request: ModelRequest) -> None:
    """Let the other tasks on this event loop run on until they wait, before answering.

    A provider's reply takes a while, and meanwhile the program's other tasks go on:
    gathered siblings make their own requests and never see this one finished. Offline
    models wait here instead, so tests and replays see the overlap production sees. The
    loop ends at the first yield after which the run's DAG did not change.
    """
    dag = request.rendered.dag
    for _ in range(_MAX_YIELDS):
        before = len(dag)
        await asyncio.sleep(0)
        if len(dag) == before:
            return


def reply_text(reply: Reply) -> str:
    """A scripted reply (not a tool call) as the text a model sends: JSON for dicts,
    lists and pydantic models; UsageError for anything else."""
    if isinstance(reply, str):
        return reply
    if isinstance(reply, BaseModel):
        return reply.model_dump_json()
    if isinstance(reply, (dict, list, int, float, bool)):
        return json.dumps(reply, ensure_ascii=False)
    raise UsageError(
        f"a scripted reply must be a str, dict, list, pydantic model or exception, "
        f"not {type(reply).__name__}"
    )


_CHUNK = re.compile(r"\s*\S+|\s+")


def _estimate_tokens(request: ModelRequest) -> int:
    characters = len(request.rendered.system) + request.rendered.text_length() + len(request.text)
    return max(1, characters // 4)


def _reply_list(function: Any, replies: Any) -> deque[Reply]:
    """The replies of a script (or of one function's script) as a queue; UsageError
    naming the fix when they are not a list."""
    where = "ScriptedModel(replies)" if function is None else f"the replies for {function!r}"
    if isinstance(replies, (str, bytes)):
        raise UsageError(f"{where} must be a list of replies, not one string: [{replies!r:.60}]")
    if callable(replies):
        raise UsageError(
            f"{where} must be a list of replies, not {type(replies).__name__} "
            f"{getattr(replies, '__name__', '')!s}; to compute replies, pass one callable as "
            "the whole script, ScriptedModel(lambda request: ...), which sees "
            "request.function"
        )
    try:
        return deque(replies)
    except TypeError:
        raise UsageError(
            f"{where} must be a list of replies, not {type(replies).__name__}: {replies!r:.60}"
        ) from None
