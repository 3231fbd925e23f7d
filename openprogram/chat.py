"""A multi-turn chat: the public path of session/chat.py (`from openprogram.chat import ...`)."""

from .session.chat import chat_turn, respond

__all__ = ["chat_turn", "respond"]
