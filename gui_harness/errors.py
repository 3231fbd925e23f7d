"""The errors gui_harness raises, grafted onto openprogram's tree (openprogram/errors.py).

RunError (openprogram)
├── InvalidAction (+ValueError)     the model proposed an action that does not parse
├── ActionRejected                  the policy refused a well-formed action
└── DesktopError                    a desktop backend failed
    ├── DesktopAuthError                a desktop server refused the token: pass the right one
    └── DesktopTimeout (+TimeoutError)  the backend did not answer in time
UsageError (openprogram)
└── InvalidTask                     a batch task (or a tasks-file line) is malformed
"""

from __future__ import annotations

from typing import Any

from openprogram.errors import RunError, UsageError

__all__ = [
    "ActionRejected",
    "DesktopAuthError",
    "DesktopError",
    "DesktopTimeout",
    "InvalidAction",
    "InvalidTask",
]


class InvalidAction(RunError, ValueError):
    """An action (usually from a model) is malformed; the message says what valid looks like."""


class ActionRejected(RunError):
    """The policy refused an action. `action` is what was refused, `reason` says why."""

    def __init__(self, reason: str, *, action: Any = None, node_id: str | None = None) -> None:
        super().__init__(reason, node_id=node_id)
        self.action = action
        self.reason = reason


class DesktopError(RunError):
    """A desktop backend failed to capture the screen or to perform an action."""


class DesktopTimeout(DesktopError, TimeoutError):
    """A desktop backend did not answer within its timeout."""


class DesktopAuthError(DesktopError):
    """A desktop server refused the request's token; retrying will not help, the token must
    be the one serve_desktop() returned (`DesktopServer.token`)."""


class InvalidTask(UsageError):
    """A batch task, or a line of a tasks file, is malformed; the message names the line."""

    @staticmethod
    def problems(exc: Any, *, label: str = "") -> str:
        """A pydantic ValidationError's first five problems, each field and message cut
        to a bounded length: `{label}{field}: {message}; ...`."""
        from openprogram.echo import cut

        return "; ".join(
            f"{label}{cut('.'.join(str(p) for p in e['loc']) or 'task')}: {cut(e['msg'])}"
            for e in exc.errors()[:5]
        )
