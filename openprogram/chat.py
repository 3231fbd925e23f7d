"""A multi-turn chat the way openprogram does it: the session is the conversation.

Owns `respond`, the agentic function that answers the latest user message with every
earlier turn in view, and `chat_turn` (submit, then respond). Each user message is a
`user` node (`session.submit`), each answer a `respond` call with its llm node, so a
reopened session continues the conversation. Start at chat_turn().
"""

from __future__ import annotations

from openprogram.function import agentic_function
from openprogram.runtime import llm
from openprogram.session import Session

__all__ = ["chat_turn", "respond"]

_ASK = "Answer my latest message above, in the language I wrote it in."


@agentic_function(expose="llm")
def respond() -> str:
    """Answer the user's latest message; the history rendered before it (the session's
    earlier user messages and answers) is the conversation. Streams: callbacks see the
    chunks through `on_llm_chunk`. Records one llm node."""
    return "".join(llm(_ASK, stream=True))


def chat_turn(session: Session, text: str) -> str:
    """One turn: record `text` as a user node of `session`, then answer it (respond());
    the answer. Call it inside `with session, Runtime(...)`."""
    session.submit(text)
    return respond()
