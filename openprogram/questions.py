"""Questions a run waits on: the public path of agentic/questions.py."""

from .agentic.questions import Question, approval

__all__ = ["Question", "approval"]
