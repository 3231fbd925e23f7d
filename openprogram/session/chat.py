"""A multi-turn chat the way openprogram does it: the session is the conversation.

Owns `respond`, the agentic function that answers one user message with every earlier
turn in view as real chat messages, and `chat_turn`. Each turn is one `respond` call:
its input is the user's message, its llm node sends that message as the user turn and
records the reply, and its tool rounds are tool calls and tool messages, so a reopened
session continues the conversation. Start at chat_turn().
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from openprogram.agentic.function import agentic_function
from openprogram.core import _context
from openprogram.errors import UsageError
from openprogram.render._walk import CONVERSATION
from openprogram.runtime.ambient import llm
from openprogram.session.session import Session, current_frame

__all__ = ["chat_turn", "respond"]


@agentic_function(expose="llm", input={"tools": {"hidden": True}})
def respond(message: str, tools: Sequence[Callable[..., Any]] | None = None) -> str:
    """Answer `message`, the user's next turn, in the conversation the session holds.

    The model gets the earlier turns as they were: each user message as a user message,
    each answer as an assistant message, and each tool round as the assistant's tool
    calls followed by one tool message per result; then `message`. tools: functions the
    model may call (as for llm()). Streams: callbacks see the chunks through
    `on_llm_chunk`. Records one llm node per exchange (one more per tool round).
    """
    frame = current_frame()
    if frame is not None:  # later turns see this one's tool rounds as tool messages
        frame.meta[CONVERSATION] = True
    return "".join(llm(message, stream=True, tools=list(tools) if tools else None))


def chat_turn(
    session: Session, text: str, *, tools: Sequence[Callable[..., Any]] | None = None
) -> str:
    """One turn of the conversation `session` holds: answer `text` (respond()) and
    return the answer. Call it inside `with session, Runtime(...)`; raises UsageError
    when another session records here."""
    if _context.current_session() is not session:
        raise UsageError(
            f"chat_turn(session {session.id!r}, ...) runs outside that session: enter it "
            "first (`with session, Runtime(...): chat_turn(session, text)`)"
        )
    return respond(text, tools=tools)
