"""Summaries for long runs: summarize_history and the step that asks for one.

Owns what the runtime does before an llm() call whose `{"tokens": N}` render would drop
history (DESIGN.md §4 "Compaction"): it calls the compactor (an agentic function
`(text) -> summary`) on what no summary covers yet, recorded like any call, its code node
carrying `meta["covers"] = [first_seq, last_seq]`; the render (_compact.py) then shows
the summary in place of those nodes. Start at compacting().
"""

from __future__ import annotations

import base64
import logging
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from openprogram.agentic.function import agentic_function
from openprogram.core import _context
from openprogram.core.dag import Node, RenderRange, check_render_range
from openprogram.core.image import Image, is_image
from openprogram.errors import RunStopped, UsageError
from openprogram.render._tokens import counter
from openprogram.render.render import RenderedContext, render_context
from openprogram.runtime._step import Call, Step

__all__ = ["count_tokens", "summarize_history"]

log = logging.getLogger("openprogram")

SUMMARY_PROMPT = (
    "Below is the earlier part of an agent's history, one line per step: calls with "
    "their inputs and outputs, and model replies. Write a concise summary that lets the "
    "agent continue without it: the goal, what was done and found, what failed, and "
    "any values (names, numbers, ids, coordinates) it will still need. Plain text, at "
    "most a few short paragraphs.\n\n"
)


class Asks(Protocol):
    """What summarize_history uses of its runtime (a Runtime): one llm() call."""

    def llm(self, content: object, /) -> object: ...


@agentic_function(render_range={"callers": 0})
def summarize_history(text: str, runtime: Asks | None = None) -> str:
    """Summarise an agent's earlier history so it can go on without it (the default
    compactor: one llm() call that sees nothing but this text)."""
    assert runtime is not None  # @agentic_function passes the ambient one
    return str(runtime.llm(SUMMARY_PROMPT + text))


def count_tokens(content: object, *, model: str | None = None) -> int:
    """Tokens that `content` costs `model`, as a `{"tokens": N}` budget counts them:
    llm() content (a str, an image, or a list of text and image parts) or chat messages
    as sent (`RenderedContext.messages`: images as data URLs). litellm's counter for
    litellm model names, an estimate for others and None; images in high detail."""
    count = counter(model)
    parts = content if isinstance(content, (list, tuple)) else [content]
    total = 0
    for part in parts:
        if isinstance(part, dict) and "role" in part:  # a chat message
            total += count.message() + count_tokens(part.get("content") or "", model=model)
        elif isinstance(part, dict) and part.get("type") in ("image", "image_url"):
            width, height = _image_size(part)
            total += count.image(width, height)
        elif isinstance(part, dict):
            total += count.text(str(part.get("text", "")))
        elif is_image(part):
            width, height = Image(part).size
            total += count.image(width, height)
        else:
            total += count.text(str(part))
    return total


def _image_size(part: dict[str, Any]) -> tuple[int, int]:
    if part["type"] == "image_url":  # a data URL, as RenderedContext.messages sends it
        url = str(part["image_url"]["url"])
        return Image(base64.b64decode(url.split(",", 1)[1])).size
    return Image(part.get("image", part.get("path"))).size


class _Settings(Protocol):
    @property
    def system(self) -> str | None: ...

    @property
    def compactor(self) -> Callable[[str], Any] | None: ...


class Renders(Protocol):
    """What compaction reads of the exchanges it comes before (_exchange.py's Exchanges,
    the layer above): the runtime's system prompt and compactor, and the image limit."""

    @property
    def runtime(self) -> _Settings: ...

    def image_limit(self) -> int | None: ...


def compacting(
    exchanges: Renders,
    override: dict[str, Any] | RenderRange | None,
    model_name: str | None,
    include: Sequence[str] = (),
) -> Step[None]:
    """The step before an llm() call in the current frame, and before each turn of its
    tool loop (`include`: the loop's turns so far): when its token budget would drop
    history no summary covers, ask the compactor for a summary of all it no longer holds
    but the newest `keep` nodes (under allm() an async compactor is awaited, a sync one
    runs on a worker thread). No budget, or nothing to drop: nothing happens. A
    compactor that fails is logged, and the render drops what it must (each node in its
    report)."""
    planned = _plan(exchanges, override, model_name, include)
    if planned is not None:
        compactor, text, covers = planned
        with _summarizing(compactor, covers):
            yield Call(compactor, text)


@contextmanager
def _summarizing(compactor: Any, covers: list[int]) -> Iterator[None]:
    """The compactor's call, recorded with `covers`; a failure other than a stop or a
    usage error is logged and swallowed (the render then drops what does not fit)."""
    try:
        with _context.entered(next_meta={"covers": covers}):
            yield
    except (RunStopped, UsageError):
        raise
    except Exception:
        log.warning(
            "openprogram: the compactor %s failed; this call's history drops what does not "
            "fit its token budget (its report lists each node)",
            getattr(compactor, "__name__", compactor),
            exc_info=True,
        )


def _plan(
    exchanges: Renders,
    override: dict[str, Any] | RenderRange | None,
    model_name: str | None,
    include: Sequence[str] = (),
) -> tuple[Callable[[str], Any], str, list[int]] | None:
    """(compactor, text, covers) when the coming render would drop uncovered history."""
    session = _context.current_session()
    dag = session.dag
    frame_id = _context.frame_id()
    frame = dag.get(frame_id) if frame_id is not None else None
    window = check_render_range(override) if override is not None else None
    if window is None and frame is not None:
        window = frame.render_range
    if window is None or window.tokens is None:
        return None
    rendered = render_context(
        dag,
        frame.id if frame is not None else None,
        window,
        system=exchanges.runtime.system,
        max_images=exchanges.image_limit(),
        include=include,
        tokens_model=model_name,
    )
    fitted = rendered.fitted
    if fitted is None or not fitted.needs_summary:
        return None
    fresh = fitted.uncovered()
    if not fresh:
        return None
    lines = []
    first = fresh[0].seq
    if fitted.summary is not None:
        lines.append(f"Summary of what came before: {fitted.summary.output}")
        first = min(first, fitted.summary.meta["covers"][0])
    lines.extend(fitted.lines(fresh))
    own = _context.call_context().compactor
    compactor = own or exchanges.runtime.compactor or summarize_history
    return compactor, "\n".join(lines), [first, fresh[-1].seq]


def note_over_budget(node: Node, rendered: RenderedContext, warned: set[str]) -> None:
    """Say so when llm node `node`'s `{"tokens": N}` history does not fit even after
    compaction (what always shows is too big): an "over_budget" entry in its report, and
    a warning once per function name in `warned`."""
    fitted = rendered.fitted
    if fitted is None or fitted.tokens <= fitted.budget:
        return
    reason = (
        f"the history needs {fitted.tokens} tokens, over tokens={fitted.budget}, after "
        "compaction: what always shows (the calls on the stack, the newest `keep` nodes, a "
        "tool loop's newest round) does not fit"
    )
    node.meta.setdefault("report", []).append(
        {"kind": "over_budget", "node_id": node.id, "reason": reason}
    )
    if node.name in warned:
        return
    warned.add(node.name)
    warnings.warn(
        f"{node.name}: {reason}. Raise the budget, lower render_range's keep, or make the "
        "tools return less (the report of each such llm node says so too)",
        UserWarning,
        stacklevel=4,
    )
