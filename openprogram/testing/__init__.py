"""Testing helpers shipped with openprogram: a local OpenAI-compatible server.

`OpenAIServer` answers litellm (or any OpenAI client) on 127.0.0.1 from a script;
`openprogram serve-model` runs it from the shell. ScriptedModel (openprogram.models.model) is
the in-process fake. See docs/testing.md.
"""

from openprogram.testing.server import OpenAIServer, RecordedRequest, Responder

__all__ = ["OpenAIServer", "RecordedRequest", "Responder"]
