"""Every error openprogram raises, split by who must act.

    OpenProgramError
    ├── UsageError (ValueError)            the developer called something wrongly
    │   ├── ConfigError                    a setting is missing or invalid
    │   └── AlreadySettled                 a call or operation was settled already (by whom, when)
    ├── RunError (RuntimeError)            something failed while running; carries .node_id
    │   ├── ModelError                     the provider failed (after retries where they apply)
    │   │   ├── ModelAuthError             bad or missing API key: never retried
    │   │   ├── ModelBadRequest            the provider refused the request: never retried
    │   │   ├── ModelUnavailable           transient failures outlasted the retries
    │   │   ├── ModelOutputError (+ValueError)  an empty reply, or not matching response_format
    │   │   └── ScriptExhausted            a ScriptedModel ran out of replies
    │   ├── ReplayMismatch                 a ReplayModel met a call the recording lacks
    │   ├── StoreError                     a session store failed
    │   │   ├── UnsupportedFormatVersion   the store was written by another format version
    │   │   ├── SessionLocked              another live writer holds the session's lease
    │   │   └── StoreDamaged               the store's file or one of its rows is damaged
    │   ├── ResumeDivergence               a resumed program took a different path
    │   ├── EffectUnknown                  an effect="once" call was interrupted: settle it
    │   ├── UnsupportedOperation           a stored operation's kind or version is not registered
    │   ├── OperationFailed                an operation failed, was cancelled, or is unknown
    │   ├── RunFailed                      a queued run failed, stopped, was cancelled or waits
    │   └── MCPServerError                 an MCP server failed a call, timed out or died
    └── RunStopped                         control signal: a gate or limit ended the run
        ├── BudgetExceeded                 the BudgetManager's cap was reached
        └── RunWaiting                     ask_user has no answer yet: the run suspends

Third-party errors are translated in exactly one place each (litellm: _litellm.py).
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = [
    "AlreadySettled",
    "BudgetExceeded",
    "ConfigError",
    "EffectUnknown",
    "MCPServerError",
    "ModelAuthError",
    "ModelBadRequest",
    "ModelError",
    "ModelOutputError",
    "ModelUnavailable",
    "OpenProgramError",
    "OperationFailed",
    "ReplayMismatch",
    "ResumeDivergence",
    "RunError",
    "RunFailed",
    "RunStopped",
    "RunWaiting",
    "ScriptExhausted",
    "SessionLocked",
    "StoreDamaged",
    "StoreError",
    "UnsupportedFormatVersion",
    "UnsupportedOperation",
    "UsageError",
]


class OpenProgramError(Exception):
    """Base of every error openprogram raises."""


class UsageError(OpenProgramError, ValueError):
    """The developer called something wrongly; the message says how to call it."""


class ConfigError(UsageError):
    """A setting is missing or invalid (model name, store URL, environment)."""


class AlreadySettled(UsageError):
    """Settling was refused: the store holds the call (or operation) settled already, or
    finished, by another Session or process: settling is a compare-and-set on the stored
    node, so of two settles only the first lands (the same settle again is a no-op).
    `node_id` names the call, `by` who settled it, `at` when (epoch seconds), `how`
    ("result", "rerun", or what else the store holds); nothing changed."""

    def __init__(
        self,
        message: str,
        *,
        node_id: str | None = None,
        by: str | None = None,
        at: float | None = None,
        how: str | None = None,
    ) -> None:
        super().__init__(message)
        self.node_id = node_id
        self.by = by
        self.at = at
        self.how = how


class RunError(OpenProgramError, RuntimeError):
    """Something failed while a program ran. `node_id` names the node it is recorded on."""

    def __init__(self, message: str, *, node_id: str | None = None) -> None:
        super().__init__(message)
        self.node_id = node_id


class ModelError(RunError):
    """The model provider failed. `retryable` says whether waiting could help."""

    retryable: bool = False


class ModelAuthError(ModelError):
    """The provider rejected the credentials; fix the API key, retrying will not help."""


class ModelBadRequest(ModelError):
    """The provider refused the request as malformed or unsupported."""


class ModelUnavailable(ModelError):
    """Transient failures (rate limits, timeouts, 5xx) outlasted the retries."""

    retryable = True


class ModelOutputError(ModelError, ValueError):
    """The model's reply was unusable: no content and no tool calls, or not valid against
    response_format even after one repair. Never retried."""

    def __init__(self, message: str, *, node_id: str | None = None, reply: str = "") -> None:
        super().__init__(message, node_id=node_id)
        self.reply = reply


class ScriptExhausted(ModelError):
    """A ScriptedModel was asked for more replies than it was given."""


class ReplayMismatch(RunError):
    """A ReplayModel was asked something the recorded session does not hold."""


class StoreError(RunError):
    """A session store failed to read or write."""


class UnsupportedFormatVersion(StoreError):
    """The store was written in a format version this openprogram cannot read."""


class SessionLocked(StoreError):
    """Another live writer holds the session's writer lease (one writer per session):
    wait for it to finish, or record into a fork. `holder` names that writer."""

    def __init__(self, message: str, *, holder: str | None = None) -> None:
        super().__init__(message)
        self.holder = holder


class StoreDamaged(StoreError):
    """The store's file or one of its rows is damaged: nothing is read as if it were whole.
    Restore a backup; `openprogram sessions check` says what is still readable."""


class ResumeDivergence(RunError):
    """A resumed program called something different from what was recorded at that place."""


class EffectUnknown(RunError):
    """An `effect="once"` call started and never finished, so whether its side effect
    happened is unknown; it is recorded `unknown` and is not run again. A person settles
    it: `session.settle(node_id, result)` (the call returns `result`) or
    `session.settle(node_id, rerun=True)`, or `openprogram sessions settle`. `call` is the
    function's name, `key` its idempotency key (look the effect up by it)."""

    def __init__(
        self, message: str, *, node_id: str | None = None, call: str = "", key: str = ""
    ) -> None:
        super().__init__(message, node_id=node_id)
        self.call = call
        self.key = key


class UnsupportedOperation(RunError):
    """A stored or new operation is of a kind, or a version of it, this program registers
    no executor for: never run as another version. `kind` and `version` name it."""

    def __init__(self, message: str, *, kind: str = "", version: int = 0) -> None:
        super().__init__(message)
        self.kind = kind
        self.version = version


class OperationFailed(RunError):
    """An operation a tool returned failed, was cancelled, or is `unknown`; inside the
    tool loop it goes back to the model as the call's error. `operation` is its id,
    `state` the state it ended in."""

    def __init__(
        self, message: str, *, node_id: str | None = None, operation: str = "", state: str = ""
    ) -> None:
        super().__init__(message, node_id=node_id)
        self.operation = operation
        self.state = state


class MCPServerError(RunError):
    """An MCP server failed a tool call: an error result, a refusal, a timeout, or a
    connection that broke (the server is restarted on next use). Inside the tool loop
    it goes back to the model as the call's error."""


class RunFailed(RunError):
    """A queued run (openprogram.runs) did not complete: `state` says how it ended
    (failed, stopped, cancelled) or that it waits for a person (waiting)."""

    def __init__(self, message: str, *, state: str = "failed") -> None:
        super().__init__(message)
        self.state = state


class RunStopped(OpenProgramError):
    """Control signal: a gate (budget, user callback, limit) ended the run cleanly."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BudgetExceeded(RunStopped):
    """The BudgetManager's max_cost was reached and raise_error=True."""


class AskedQuestion(Protocol):
    """What RunWaiting carries: an openprogram.Question (agentic/questions.py), by what
    a handler reads of it."""

    @property
    def id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def choices(self) -> list[Any] | None: ...
    @property
    def schema(self) -> dict[str, Any] | None: ...
    @property
    def node_id(self) -> str: ...
    def expects(self) -> str: ...


class RunWaiting(RunStopped):
    """Control signal: `ask_user` has no answer yet, so the run suspends. The calls on its
    stack are recorded `waiting`; answer with `session.answer(exc.question.id, value)`
    (or `openprogram sessions answer`) and re-run under Session.open(..., resume=True).
    `question` is the openprogram.Question asked."""

    def __init__(self, reason: str, *, question: AskedQuestion | None = None) -> None:
        super().__init__(reason)
        self.question = question
