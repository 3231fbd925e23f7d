"""What llm() sends and parses: content parts, the schema instruction, structured replies.

Owns turning llm() content into parts (images stored in the DAG, referenced) and
reading a reply as a response_format instance (fenced or embedded JSON, the problems
to repair). runtime.py uses it. Start at content_parts().
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from openprogram.core.dag import ContextDAG
from openprogram.core.image import Image, is_image
from openprogram.echo import cut, echo
from openprogram.errors import UsageError

__all__ = ["Invalid", "content_parts", "parse", "repair_prompt", "schema_instruction"]

T = TypeVar("T", bound=BaseModel)


def content_parts(content: object, dag: ContextDAG) -> list[dict[str, Any]]:
    """llm() content as parts, images stored in the DAG and referenced."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if is_image(content):
        return [{"type": "image", "image": dag.add_image(content)}]
    if not isinstance(content, (list, tuple)):
        raise UsageError(
            f"llm() content must be a str or a list of parts, not {type(content).__name__}"
        )
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "text", "text": part})
        elif is_image(part):
            parts.append({"type": "image", "image": dag.add_image(part)})
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append({"type": "text", "text": str(part.get("text", ""))})
        elif isinstance(part, dict) and part.get("type") == "image":
            source = part.get("image", part.get("path"))
            if source is None:
                raise UsageError("an image part needs 'image' (a PIL image) or 'path'")
            image_part = {"type": "image", "image": dag.add_image(Image(source))}
            description = part.get("description")
            if isinstance(description, str) and description:
                image_part["description"] = description  # its text when it is no longer sent
            parts.append(image_part)
        else:
            raise UsageError(
                f"unknown llm() content part {echo(part)}; use {{'type': 'text', 'text': ...}} "
                "or {'type': 'image', 'image': PIL.Image | 'path': ..., 'description': ...}"
            )
    return parts


def schema_instruction(response_format: type[BaseModel]) -> str:
    if not (isinstance(response_format, type) and issubclass(response_format, BaseModel)):
        shown = getattr(response_format, "__name__", None) or repr(response_format)
        raise UsageError(
            f"response_format={shown} is not a pydantic model class; pass a BaseModel "
            "subclass (class Answer(BaseModel): text: str), or leave it out to get the "
            "reply as text"
        )
    schema = json.dumps(response_format.model_json_schema(), ensure_ascii=False)
    return f"Reply with only a JSON object that matches this JSON schema:\n{schema}"


def repair_prompt(problem: str) -> str:
    return (
        "Your previous reply could not be used: "
        f"{problem}\nReply again with only the corrected JSON object."
    )


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Invalid:
    """A reply that did not validate: what to repair."""

    problem: str


def parse(reply: str, response_format: type[T]) -> T | Invalid:
    """The reply as a `response_format` instance (fenced or embedded JSON too), or what
    did not validate."""
    text = reply.strip()
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1).strip()
    elif not text.startswith(("{", "[")) and "{" in text:
        text = text[text.index("{") : text.rindex("}") + 1]
    try:
        return response_format.model_validate_json(text)
    except ValidationError as exc:
        problems = "; ".join(
            f"{cut('.'.join(str(p) for p in e['loc']) or 'reply')}: {cut(e['msg'])}"
            for e in exc.errors()[:5]
        )
        return Invalid(problems)
