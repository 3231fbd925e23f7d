"""The decorator and what runs inside a decorated call: asking a person, resuming, draining.

Start at function.py (`@agentic_function`); ask.py and questions.py are the human in the
loop, _resume.py how a re-run call is matched to its record, _drain.py how SIGTERM lets
running calls stop at a node boundary, _identity.py which version of a function's code
made a call.
"""

from ._identity import code_identity
from .ask import ConsoleAsk, ask_user, needs_approval
from .function import agentic_function
from .questions import Question
from .threads import start_thread

__all__ = [
    "ConsoleAsk",
    "Question",
    "agentic_function",
    "ask_user",
    "code_identity",
    "needs_approval",
    "start_thread",
]
