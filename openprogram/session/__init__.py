"""Sessions: where a run is recorded, how it is reopened, resumed, settled and replayed.

Start at session.py (`Session`); _resuming.py says what a re-run call gets from the
record, _leasing.py how one writer at a time holds a session, effects.py how side
effects are keyed and settled, _loading.py how a stored DAG is rebuilt, replay.py
answers a model from a recording, chat.py runs a conversation.
"""

from .chat import chat_turn, respond
from .effects import idempotency_key
from .replay import ReplayModel
from .session import Session, current_frame, current_session

__all__ = [
    "ReplayModel",
    "Session",
    "chat_turn",
    "current_frame",
    "current_session",
    "idempotency_key",
    "respond",
]
