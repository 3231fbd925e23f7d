"""Models: the protocol a model implements and its adapters.

Start at model.py (the `Model` protocol, `ModelRequest`, `ModelReply`, `ScriptedModel`);
_litellm.py reaches every provider through litellm, _openai.py OpenAI-compatible servers
through the openai SDK. `ReplayModel` reads sessions, so it lives in session/.
"""

from .model import Model, ModelReply, ModelRequest, ScriptedModel, ToolCall, reply_text

__all__ = ["Model", "ModelReply", "ModelRequest", "ScriptedModel", "ToolCall", "reply_text"]
