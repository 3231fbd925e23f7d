"""Questions a run waits on: Question, finding the pending ones, checking an answer.

ask.py asks (an `ask_user` code node whose input is the question); session.py lists and
answers through this module: an answer completes the waiting ask node in place, and a
resumed run gets it back as that call's recorded output. Start at pending() and check().
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from openprogram.dag import ContextDAG, Node
from openprogram.errors import UsageError

__all__ = ["ASK", "Question", "check", "find", "pending", "question"]

ASK = "ask_user"
"""The name of the code node every ask_user call records (its meta holds `"ask": True`)."""
_PREVIEW = 200


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


def check(asked: Question, value: Any) -> Any:
    """`value` as the JSON-able answer `asked` accepts: a choice, a value matching the
    schema, or text. A string is also read as JSON where the schema or a choice needs
    it (answers from the command line are strings). UsageError naming what is expected."""
    if hasattr(value, "model_dump"):  # a pydantic model given as the answer
        value = value.model_dump(mode="json")
    if asked.choices is not None:
        for choice in asked.choices:
            if value == choice and type(value) is type(choice):
                return choice
        if isinstance(value, str):
            for choice in asked.choices:
                if not isinstance(choice, str) and _json(value) == choice:
                    return choice
        raise _wrong(asked, value)
    if asked.schema is not None:
        import jsonschema

        candidates = [value]
        if isinstance(value, str) and (parsed := _json(value)) is not _NOT_JSON:
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


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _NOT_JSON


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
