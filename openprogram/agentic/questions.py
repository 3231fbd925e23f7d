"""Questions a run waits on: Question, finding the pending ones, checking an answer.

ask.py asks (an `ask_user` code node whose input is the question; `approval` words a
tool's); session.py lists and answers through this module: an answer completes the
waiting ask node, once (`answered`, `settled`), and a resumed run gets it back as that
call's recorded output. Start at pending() and check().
"""

from __future__ import annotations

import getpass
import hashlib
import json
import math
import os
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from openprogram.core.dag import ContextDAG, Node
from openprogram.echo import elide, printable
from openprogram.errors import UsageError

__all__ = [
    "ASK",
    "Question",
    "answered",
    "answerer",
    "approval",
    "check",
    "find",
    "pending",
    "question",
    "settled",
]

ASK = "ask_user"
"""The name of the code node every ask_user call records (its meta holds `"ask": True`)."""
_PREVIEW = 200
_ARGUMENT = 200
"""Characters of one argument an approval shows; a longer one loses its middle."""
_DEPTH = 100
"""Levels of nesting an answer may have (a list in a dict in a list...)."""


@dataclass(frozen=True)
class Question:
    """A question a run asked a person. `str(question)` is its text.

    id: what `session.answer(id, value)` takes (the ask node's id; stable across resumes).
    choices: the allowed answers, or None. schema: the JSON schema an answer must match
    (from ask_user's pydantic `schema=`), or None; with neither the answer is text.
    node_id: the `ask_user` code node in the session's DAG.
    """

    id: str
    text: str
    choices: list[Any] | None = None
    schema: dict[str, Any] | None = None
    node_id: str = ""

    def __str__(self) -> str:
        return self.text

    def expects(self) -> str:
        """What an answer must be, in words (for prompts and error messages)."""
        if self.choices is not None:
            return "one of " + ", ".join(json.dumps(c, ensure_ascii=False) for c in self.choices)
        if self.schema is not None:
            title = self.schema.get("title") or "value"
            return f"a JSON {title} matching {_preview(self.schema)}"
        return "text (a string)"


def is_ask(node: Node) -> bool:
    return node.kind == "code" and node.name == ASK and bool(node.meta.get("ask"))


def question(node: Node) -> Question:
    """The Question an ask node asked, from its recorded input."""
    asked = node.input if isinstance(node.input, dict) else {}
    choices = asked.get("choices")
    schema = asked.get("schema")
    return Question(
        id=node.id,
        text=str(asked.get("question", "")),
        choices=list(choices) if isinstance(choices, list) else None,
        schema=schema if isinstance(schema, dict) else None,
        node_id=node.id,
    )


def pending(dag: ContextDAG) -> list[Question]:
    """The questions of `dag` still waiting for an answer, oldest first."""
    return [question(n) for n in dag.nodes if n.status == "waiting" and is_ask(n)]


def find(dag: ContextDAG, question_id: str) -> Node:
    """The ask node of `question_id` (also one answered already); UsageError naming the
    pending ones otherwise."""
    node = dag.get(question_id)
    if node is not None and is_ask(node):
        return node
    waiting = [q.id for q in pending(dag)]
    raise UsageError(
        f"no question {_preview(question_id)} in this session; the pending ones are "
        f"{waiting!r} (see session.pending() or `openprogram sessions pending ID`)"
    )


def check(asked: Question, value: object) -> object:
    """`value` as the JSON-able answer `asked` accepts: a choice, a value matching the
    schema, or text. A string is also read as JSON where the schema or a choice needs
    it (answers from the command line are strings). UsageError naming what is expected,
    also for NaN or infinity and for an answer nested over 100 levels deep."""
    if hasattr(value, "model_dump"):  # a pydantic model given as the answer
        value = value.model_dump(mode="json")
    _sound(asked, value)
    if asked.choices is not None:
        for choice in asked.choices:
            if value == choice and type(value) is type(choice):
                return choice
        if isinstance(value, str):
            for choice in asked.choices:
                if not isinstance(choice, str) and _json(asked, value) == choice:
                    return choice
        raise _wrong(asked, value)
    if asked.schema is not None:
        import jsonschema

        candidates = [value]
        if isinstance(value, str) and (parsed := _json(asked, value)) is not _NOT_JSON:
            candidates.append(parsed)
        problem = ""
        for candidate in candidates:
            try:
                jsonschema.validate(candidate, asked.schema)
                return candidate
            except jsonschema.ValidationError as exc:
                problem = exc.message  # the parsed JSON's problem says more
            except jsonschema.SchemaError as exc:
                raise UsageError(f"question {asked.id} has an invalid schema: {exc}") from exc
        raise _wrong(asked, value, problem)
    if not isinstance(value, str):
        raise _wrong(asked, value)
    return value


_NOT_JSON = object()


def _json(asked: Question, text: str) -> Any:
    """`text` read as JSON, or _NOT_JSON; UsageError for NaN, infinity or nesting over
    _DEPTH levels (which would end the parser in a RecursionError)."""
    try:
        parsed = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise _too_deep(asked) from None
    except _Constant as exc:
        raise _not_finite(asked, exc.args[0]) from None
    except ValueError:
        return _NOT_JSON
    _sound(asked, parsed)
    return parsed


class _Constant(ValueError):
    """NaN, Infinity or -Infinity met while parsing an answer (args[0])."""


def _no_constant(name: str) -> Any:
    raise _Constant(name)


def _sound(asked: Question, value: Any) -> None:
    """UsageError when `value` holds a float that is not finite, text that is not UTF-8
    (a lone surrogate) or nests over _DEPTH levels; walked without recursion, so no
    depth ends it in a RecursionError."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise _not_finite(asked, repr(item))
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                raise UsageError(
                    f"{_preview(item)} is not an answer to question {asked.id}: it is not "
                    "UTF-8 text (it holds a lone surrogate)"
                ) from None
            continue
        if isinstance(item, (dict, list, tuple)):
            if depth >= _DEPTH:
                raise _too_deep(asked)
            items = [*item, *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in items)


def _too_deep(asked: Question) -> UsageError:
    return UsageError(
        f"the answer to question {asked.id} is nested too deeply: an answer holds at most "
        f"{_DEPTH} levels of lists and objects"
    )


def _not_finite(asked: Question, text: str) -> UsageError:
    return UsageError(
        f"{text} is not an answer to question {asked.id}: NaN and infinity are not numbers "
        f"JSON can hold; it expects {asked.expects()}"
    )


# -- answering once ----------------------------------------------------------------------
def answerer() -> str:
    """Who answers from this process, as recorded with the answer: "user@host pid N"."""
    try:
        user = getpass.getuser()
    except (OSError, KeyError):  # no name for this uid (a container, say)
        user = f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()} pid {os.getpid()}"


def answered(node: Node, value: object, dag: ContextDAG, *, at: float, by: str) -> Node:
    """A copy of ask node `node` as the answer `value` completes it: what the store is
    asked to record in its compare-and-set (the node itself changes only once it has)."""
    meta = {**node.meta, "answered_at": at, "answered_by": by}
    end = dag.nodes[-1].seq if len(dag) else 0
    return node.model_copy(
        update={"output": value, "status": "completed", "error": None, "ended_at": at,
                "end_seq": end, "meta": meta}
    )  # fmt: skip


def settled(asked: Question, node: Node, value: object) -> None:
    """Nothing when `node` (as stored) holds `value` as its answer already (answering
    again is idempotent); else UsageError naming who answered, when, and with what."""
    if node.status == "completed":
        if node.output == value:
            return
        by = node.meta.get("answered_by")
        at = node.meta.get("answered_at")
        who = f" by {printable(str(by), newlines=False)[:_PREVIEW]}" if by else ""
        when = ""
        if isinstance(at, (int, float)) and math.isfinite(at):
            when = time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
        raise UsageError(
            f"question {asked.id} was answered already{who}{when}, with "
            f"{_preview(node.output)}; an answer is final, nothing changed (fork the "
            "session before it to answer otherwise)"
        )
    raise UsageError(f"question {asked.id} is not waiting for an answer (it is {node.status})")


# -- approvals ---------------------------------------------------------------------------
def approval(name: str, arguments: Mapping[str, Any]) -> str:
    """The question a tool needing approval asks: "Allow name(a=1, b='x')?", showing
    every argument the call will use, a long one with its middle elided and the sha256
    of it whole (so calls that differ anywhere ask different questions), and no control
    character a terminal would act on (an argument name or value cannot redraw it)."""
    shown = ", ".join(
        f"{_one_line(str(key), 100)}={_argument(value)}" for key, value in arguments.items()
    )
    return f"Allow {_one_line(name, 100)}({shown})?"


def _argument(value: Any) -> str:
    text = repr(value)
    if len(text) <= _ARGUMENT:
        return printable(text, newlines=False)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"{_one_line(text, _ARGUMENT)} (sha256 {digest})"


def _one_line(text: str, limit: int) -> str:
    return elide(printable(text, newlines=False), limit)


def _wrong(asked: Question, value: Any, problem: str = "") -> UsageError:
    why = f" ({problem[:_PREVIEW]})" if problem else ""
    return UsageError(
        f"{_preview(value)} is not an answer to question {asked.id} "
        f"({_preview(asked.text)!s}): it expects {asked.expects()}{why}"
    )


def _preview(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    text = repr(text) if isinstance(value, str) else text
    return text if len(text) <= _PREVIEW else text[:_PREVIEW] + "…"
