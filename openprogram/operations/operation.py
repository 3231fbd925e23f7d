"""Operation: a serializable, versioned description of work, and the kinds that run it.

Owns `Operation` (what a tool returns instead of doing the work), the registry of
operation kinds (kind, version, effect, executor: `operation_kind`), `OperationContext`
(what an executor gets besides its arguments: heartbeats, cancellation) and
`OperationRecord` (an operation as stored, with its state). Running them is manager.py's
job; recording their states is tracker.py's. Start at Operation.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from openprogram.core.dag import Effect
from openprogram.errors import UnsupportedOperation, UsageError

__all__ = [
    "Executor",
    "Operation",
    "OperationCancelled",
    "OperationContext",
    "OperationKind",
    "OperationRecord",
    "OperationState",
    "kind_of",
    "operation_kind",
]

OperationState = Literal["pending", "running", "done", "failed", "cancelled", "unknown"]
"""pending (recorded, not started), running (handed to its manager; heartbeats show it
alive), done (its result is recorded), failed (its executor raised, or it cannot run),
cancelled (asked to stop, and stopped), unknown (an effect="once" operation was running
when its process died: whether it happened is unknown until a person settles it)."""
FINISHED: tuple[OperationState, ...] = ("done", "failed", "cancelled")


def _new_id() -> str:
    return "op-" + os.urandom(8).hex()


class Operation(BaseModel):
    """Work a tool describes instead of doing: `Operation(kind, args, version)`.

    kind: a name registered with `operation_kind` (its executor does the work). args:
    JSON-able arguments. version: the kind's version the args are written for (a stored
    operation of a version this program does not register is refused on resume, never
    misread). id: unique, made when created.
    """

    model_config = ConfigDict(frozen=True)

    kind: str
    args: dict[str, Any] = Field(default_factory=dict)
    version: int = 1
    id: str = Field(default_factory=_new_id)

    def __init__(
        self,
        kind: str,
        args: dict[str, Any] | None = None,
        version: int = 1,
        **data: Any,
    ) -> None:
        super().__init__(kind=kind, args=args or {}, version=version, **data)

    def to_json(self) -> str:
        """The operation as JSON text (what is stored and sent to a sandbox)."""
        try:
            return json.dumps(
                self.model_dump(mode="json"), ensure_ascii=False, separators=(",", ":")
            )
        except (TypeError, ValueError) as exc:
            raise UsageError(
                f"the args of operation {self.kind!r} are not JSON ({exc}); give an "
                "Operation only strings, numbers, booleans, lists and dicts"
            ) from exc


class OperationCancelled(Exception):
    """Raised by `OperationContext.check()` once the operation was asked to stop."""


class OperationContext:
    """What an executor gets besides its args: `heartbeat()` says it is alive (long work
    should call it every few seconds), `cancelled` is set when it is asked to stop (check
    it, or call `check()`, which raises OperationCancelled)."""

    def __init__(self, id: str, heartbeat: Callable[[str | None], None] | None = None) -> None:
        self.id = id
        self.cancelled = threading.Event()
        self._heartbeat = heartbeat
        self._last = 0.0

    def heartbeat(self, detail: str | None = None, *, every_s: float = 1.0) -> None:
        """Report the operation alive (at most once every `every_s` seconds unless a
        `detail` is given, which is recorded as an event)."""
        now = time.monotonic()
        if self._heartbeat is None or (detail is None and now - self._last < every_s):
            return
        self._last = now
        self._heartbeat(detail)

    def check(self) -> None:
        """Raise OperationCancelled once the operation was asked to stop."""
        if self.cancelled.is_set():
            raise OperationCancelled(self.id)


Executor = Callable[[dict[str, Any], OperationContext], Any]
"""Does an operation's work: `(args, context) -> JSON-able result`; raising fails it."""


@dataclass(frozen=True)
class OperationKind:
    """A registered kind at one version: its effect, its executor, where it runs
    (sandbox=True: in ProcessOperations unless the Runtime names another manager) and
    the most seconds an operation of it runs, given its args (`time_limit`; None: no
    limit), which a sandbox enforces from outside."""

    kind: str
    version: int
    effect: Effect
    executor: Executor
    sandbox: bool = False
    time_limit: Callable[[dict[str, Any]], float | None] | None = None

    @property
    def module(self) -> str:
        """The module that registers this kind (a sandbox process imports it)."""
        return self.executor.__module__


_kinds: dict[tuple[str, int], OperationKind] = {}
_lock = threading.Lock()


def operation_kind(
    kind: str,
    *,
    version: int = 1,
    effect: Effect = "once",
    sandbox: bool = False,
    time_limit: Callable[[dict[str, Any]], float | None] | None = None,
) -> Callable[[Executor], Executor]:
    """Register the decorated function `(args, context) -> result` as the executor of
    operations of `kind` at `version`.

    effect: "once" (the default: an operation that was running when its process died is
    recorded `unknown`, never run again until settled) or "idempotent" (run again).
    sandbox: run it in a ProcessOperations sandbox by default (bash does). time_limit:
    `args -> seconds` the executor keeps to (bash: its timeout_s); a ProcessOperations
    sandbox whose operation runs past it by more than its `stall_s` is taken for hung
    and killed (the operation is lost: its effect rule applies). The executor
    must be a module-level function (a sandbox process imports its module). Registering
    the same kind and version again replaces it.
    """
    if not isinstance(kind, str) or not kind:
        raise UsageError(f"operation_kind({kind!r}): the kind must be a non-empty string")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise UsageError(f"operation_kind({kind!r}, version={version!r}): version is an int >= 1")
    if effect not in ("once", "idempotent"):
        raise UsageError(
            f"operation_kind({kind!r}, effect={effect!r}): effect is 'once' or 'idempotent'"
        )

    def register(executor: Executor) -> Executor:
        if not callable(executor):
            raise UsageError(f"operation_kind({kind!r}) decorates a function, not {executor!r}")
        with _lock:
            _kinds[(kind, version)] = OperationKind(
                kind, version, effect, executor, sandbox, time_limit
            )
        return executor

    return register


def kind_of(kind: str, version: int, *, operation: str = "") -> OperationKind:
    """The registered kind; raises UnsupportedOperation naming the kind, the version and
    the versions this program does register."""
    found = _kinds.get((kind, version))
    if found is not None:
        return found
    known = sorted(v for (k, v) in _kinds if k == kind)
    which = f"operation {operation!r}" if operation else "an operation"
    registered = (
        f"this program registers versions {known!r} of it"
        if known
        else "this program registers no executor for that kind"
    )
    raise UnsupportedOperation(
        f"{which} is of kind {kind!r} version {version}, but {registered}. Import the "
        f"module that registers it (@operation_kind({kind!r}, version={version})), or "
        "settle the operation by hand; it is not run as another version",
        kind=kind,
        version=version,
    )


class OperationRecord(BaseModel):
    """An operation as the session records it: what it is and where it stands."""

    id: str
    node: str
    """The tool call node that made it."""
    kind: str
    version: int
    effect: Effect
    args: dict[str, Any]
    background: bool
    state: OperationState
    result: Any = None
    error: str | None = None
    attempts: int = 0
    created_at: float
    updated_at: float
    heartbeat_at: float | None = None

    @property
    def finished(self) -> bool:
        """Whether it reached done, failed or cancelled (unknown waits for a person)."""
        return self.state in FINISHED

    def handle(self) -> dict[str, Any]:
        """What a background tool returns at once, and what poll_operation shows."""
        shown: dict[str, Any] = {"operation": self.id, "kind": self.kind, "state": self.state}
        if self.state == "done":
            shown["result"] = self.result
        elif self.error:
            shown["error"] = self.error
        return shown
