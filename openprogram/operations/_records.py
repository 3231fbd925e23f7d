"""An operation as the store holds it and as this process knows it.

Owns the stored form (`new_row()` makes a pending row of an operation, its arguments and
results kept as JSON with every known secret value masked; `record_of()` reads a row back
as an OperationRecord) and `Live`, an operation known to this process (its record, its
manager, who waits for it), with `Shared`, a fork's view of its parent's. The state
machine that moves them is tracker.py's.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from openprogram.core import _secrets
from openprogram.operations.manager import OperationManager
from openprogram.operations.operation import (
    FINISHED,
    Operation,
    OperationKind,
    OperationRecord,
)
from openprogram.store._operations import OperationRow

__all__ = ["Live", "Shared", "masked_json", "masked_text", "new_row", "record_of", "to_json"]


def to_json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def masked_text(text: str | None) -> str | None:
    """`text` as it is stored: every known secret value masked (docs/reliability.md#secrets)."""
    return None if text is None else _secrets.scrub(text, patterns=False, refresh=False)


def masked_json(text: str) -> str:
    return _secrets.scrub_json(text, refresh=False) or text


class Live:
    """An operation known to this process: its record and who waits for it."""

    __slots__ = (
        "asked_at", "done", "handed", "manager", "masked", "operation", "owner", "record",
        "started", "stopping",
    )  # fmt: skip

    def __init__(
        self, record: OperationRecord, owner: str | None = None, operation: Operation | None = None
    ) -> None:
        self.record = record
        self.owner = owner  # in a fork: the session whose operation it is (else None)
        # the operation as its tool made it (its args unmasked) when committed here
        self.operation = operation or Operation(
            record.kind, record.args, record.version, id=record.id
        )
        self.masked = operation is None and _secrets.MASK in json.dumps(record.args)
        self.done = threading.Event()
        self.manager: OperationManager | None = None
        self.started = False
        self.stopping = False  # another process asked it to stop; its manager was told
        self.asked_at = 0.0  # when the store was last asked whether it should stop
        self.handed = False  # handed back as its process stopped: its reports are ignored
        if record.state in FINISHED or record.state == "unknown":
            self.done.set()


class Shared(Live):
    """A fork's view of an operation of its parent open in this process: the parent's
    Live itself (its record, its events), under the parent's id as `owner`."""

    __slots__ = ("_of",)

    def __init__(self, of: Live, owner: str) -> None:  # the other slots stay unset
        self._of = of
        self.owner = owner

    def __getattr__(self, name: str) -> Any:  # an unset slot: the parent's
        return getattr(self._of, name)


def new_row(
    op: Operation, node: str, position: int, kind: OperationKind, background: bool, now: float
) -> OperationRow:
    return OperationRow(
        id=op.id,
        node=node,
        position=position,
        kind=op.kind,
        version=op.version,
        effect=kind.effect,
        args=masked_json(to_json(op.args)),
        background=int(background),
        state="pending",
        result=None,
        error=None,
        attempts=0,
        created_at=now,
        updated_at=now,
        heartbeat_at=None,
    )


def record_of(row: OperationRow) -> OperationRecord:
    return OperationRecord(
        id=row.id,
        node=row.node,
        kind=row.kind,
        version=row.version,
        effect=row.effect,  # type: ignore[arg-type]  # checked by the model
        args=json.loads(row.args),
        background=bool(row.background),
        state=row.state,  # type: ignore[arg-type]  # checked by the model
        result=None if row.result is None else json.loads(row.result),
        error=row.error,
        attempts=row.attempts,
        created_at=row.created_at,
        updated_at=row.updated_at,
        heartbeat_at=row.heartbeat_at,
    )
