"""Tracker: the durable state of one session's operations, and who runs them.

Owns the state machine pending -> running -> done | failed | cancelled (and unknown):
operations are committed with their tool call node in one transaction, every state
change is recorded in the session's store before it takes effect (`running` before the
work starts), and on resume unfinished ones are picked up once, by their kind's effect
rule. A fork sees the operations its shared history made, and never runs them: they
are its parent's (docs/operations.md#forks). Managers (manager.py) only run them.
Start at Tracker.commit().
"""

from __future__ import annotations

import atexit
import json
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Any, Protocol, runtime_checkable

from openprogram.core.dag import ContextDAG, Node
from openprogram.errors import AlreadySettled, EffectUnknown, OperationFailed, UsageError
from openprogram.operations._records import (
    Live,
    Shared,
    masked_json,
    masked_text,
    new_row,
    record_of,
    to_json,
)
from openprogram.operations.manager import LocalOperations, OperationManager, Reported
from openprogram.operations.operation import (
    FINISHED,
    Operation,
    OperationKind,
    OperationRecord,
    OperationState,
    kind_of,
)
from openprogram.store.base import Store
from openprogram.store.format import NodeRow, SessionInfo

__all__ = ["TrackedSession", "Tracker", "default_manager", "hand_back", "tracked", "tracker"]


@runtime_checkable
class TrackedSession(Protocol):
    """What a Tracker uses of its session (session.py's Session), which sits above it."""

    @property
    def id(self) -> str: ...

    @property
    def dag(self) -> ContextDAG: ...

    @property
    def info(self) -> SessionInfo: ...

    @property
    def store(self) -> Store | None: ...

    @property
    def holding(self) -> bool: ...

    def commit_with(
        self, node: Node, write: Callable[[NodeRow | None, dict[str, bytes]], None]
    ) -> None: ...


_trackers: weakref.WeakKeyDictionary[TrackedSession, Tracker] = weakref.WeakKeyDictionary()
_trackers_lock = threading.Lock()
_defaults: dict[str, OperationManager] = {}
_defaults_lock = threading.Lock()


def tracked(session: object) -> TrackedSession:
    """`session` (the ambient one, say) as a Tracker's session: a Session; UsageError
    for anything else."""
    if not isinstance(session, TrackedSession):
        raise UsageError(
            f"{type(session).__name__} is not a session operations can be recorded in; "
            "run the tool inside `with Session(...)`"
        )
    return session


def tracker(session: TrackedSession) -> Tracker:
    """The session's tracker (one per session object)."""
    with _trackers_lock:
        found = _trackers.get(session)
        if found is None:
            found = _trackers[session] = Tracker(session)
        return found


def default_manager(kind: OperationKind) -> OperationManager:
    """The manager of a Runtime without `operations=`: a ProcessOperations sandbox for
    sandbox kinds (bash), LocalOperations for the rest; made once per process."""
    name = "process" if kind.sandbox else "local"
    with _defaults_lock:
        manager = _defaults.get(name)
        if manager is None:
            if kind.sandbox:
                from openprogram.operations.process import ProcessOperations

                manager = ProcessOperations()
            else:
                manager = LocalOperations()
            _defaults[name] = manager
        return manager


@atexit.register
def _close_defaults() -> None:
    for manager in list(_defaults.values()):
        manager.close()
    _defaults.clear()


class Tracker:
    """The operations of one session: committed, started, recorded, waited for."""

    def __init__(self, session: TrackedSession) -> None:
        self.session = session
        self._lock = threading.RLock()
        self._ops: dict[str, Live] = {}
        self._loaded = False

    # -- the store -----------------------------------------------------------------------
    @property
    def _store(self) -> Any:
        store = self.session.store
        return store if callable(getattr(store, "commit_operations", None)) else None

    def _load(self) -> None:
        """Read the session's stored operations once (a resumed session's, say), and a
        fork's inherited ones."""
        if self._loaded:
            return
        self._loaded = True
        store = self._store
        if store is not None:
            for row in store.operations(self.session.id):
                if row.id not in self._ops:
                    self._ops[row.id] = Live(record_of(row))
        self._inherit()

    def _inherit(self) -> None:
        """A fork's view of the operations its shared history made (those whose tool call
        node it holds): its parent's Live when the parent is open in this process (the
        fork waits on the parent's own events), else as its parent's store rows hold
        them, up the chain of forks. Never run, cancelled or settled here."""
        parent = self.session.info.parent
        dag = self.session.dag
        store = self._store
        depth = 0
        while parent is not None and dag is not None and depth < 100:
            depth += 1
            with _trackers_lock:
                same = [(s, t) for s, t in _trackers.items() if getattr(s, "id", None) == parent]
            # the parent's run in this process: the object holding its lease (or any, when
            # nothing is stored); another object of it only reads, so the store is followed
            live = [t for s, t in same if t is not self and (store is None or s.holding)]
            if live:
                running: Tracker = live[0]
                for id, found in running._all().items():
                    if found.record.node in dag and id not in self._ops:
                        self._ops[id] = found if found.owner is not None else Shared(found, parent)
                return  # the parent's view holds its own inherited ones
            if store is None:
                return
            for row in store.operations(parent):
                if row.node in dag and row.id not in self._ops:
                    self._ops[row.id] = Live(record_of(row), owner=parent)
            above = store.session(parent)
            parent = None if above is None else above.parent

    def _all(self) -> dict[str, Live]:
        with self._lock:
            self._load()
            return dict(self._ops)

    def records(self) -> list[OperationRecord]:
        """Every operation of the session, oldest first."""
        with self._lock:
            self._load()
            return [live.record for live in self._ops.values()]

    def of_node(self, node_id: str) -> list[OperationRecord]:
        """The operations a tool call node made, in the order it made them."""
        with self._lock:
            self._load()
            return [live.record for live in self._ops.values() if live.record.node == node_id]

    def find(self, id: str) -> OperationRecord | None:
        """Operation `id`'s record; None when the session has no such operation."""
        with self._lock:
            self._load()
            live = self._ops.get(id)
        return None if live is None else live.record

    def get(self, id: str) -> OperationRecord:
        with self._lock:
            self._load()
            live = self._ops.get(id)
        if live is None:
            raise ValueError(f"this session has no operation {id!r}")
        return live.record

    # -- committing ----------------------------------------------------------------------
    def commit(self, node: Node, operations: Sequence[Operation], *, background: bool) -> None:
        """Record `operations` as made by tool call `node` (pending), with the node itself
        (its meta lists their ids), in one transaction. Raises UnsupportedOperation for
        an unregistered kind or version, before anything is recorded."""
        kinds = [kind_of(op.kind, op.version, operation=op.id) for op in operations]
        now = time.time()
        rows = [
            new_row(op, node.id, position, kind, background, now)
            for position, (op, kind) in enumerate(zip(operations, kinds, strict=True))
        ]
        node.meta["operations"] = [op.id for op in operations]
        store = self._store
        with self._lock:
            self._load()
            if store is not None:

                def write(row: NodeRow | None, blobs: dict[str, bytes]) -> None:
                    store.commit_operations(self.session.id, rows, row, blobs)

                self.session.commit_with(node, write)
            for row_, op in zip(rows, operations, strict=True):
                self._ops[row_.id] = Live(record_of(row_), operation=op)

    # -- running -------------------------------------------------------------------------
    def start(self, ids: Sequence[str], manager: OperationManager | None) -> None:
        """Hand each unfinished operation to its manager, once per process: pending ones
        and, when their kind is idempotent, ones that were running when a process died.
        A once-kind operation found running is recorded `unknown` instead."""
        for id in ids:
            with self._lock:
                self._load()
                live = self._ops[id]
                if live.owner is not None:  # a fork's parent's: only the parent runs it
                    continue
                if live.started or live.record.state not in ("pending", "running"):
                    continue
                kind = kind_of(live.record.kind, live.record.version, operation=id)
                live.started = True
                if live.record.state == "running" and kind.effect == "once":
                    self._move(live, ("running",), "unknown", error=_UNKNOWN, detail=_UNKNOWN)
                    continue
                if live.record.state == "running" and self._requested(id):  # asked to stop
                    # while no process ran it (a pending one is looked at as it starts)
                    self._move(live, ("pending", "running"), "cancelled", error=_REQUESTED)
                    continue
                if live.masked:  # its stored args lost a secret: never run with "***"
                    self._move(live, ("pending", "running"), "failed", error=_MASKED)
                    continue
                live.manager = manager or default_manager(kind)
            try:
                live.manager.submit(live.operation, kind, self._report)
            except Exception as exc:  # the manager cannot take it (Ray missing, say)
                self._report(id, "failed", f"{type(exc).__name__}: {exc}")
                raise

    def _report(self, id: str, what: Reported, value: Any) -> bool:
        live = self._ops.get(id)
        if live is not None and live.handed:  # its process handed it back: stop there
            return False
        if what == "heartbeat":
            return self._heartbeat(id, value)
        with self._lock:
            live = self._ops.get(id)
            if live is None:
                return False
            if what == "running":
                if self._requested(id):  # asked to stop (sessions ops --cancel) before it began
                    self._move(live, ("pending", "running"), "cancelled", error=_REQUESTED)
                    return False
                attempts = live.record.attempts + 1
                return self._move(live, ("pending", "running"), "running", attempts=attempts)
            if what == "done":
                return self._move(live, ("running",), "done", result=value)
            if what == "failed":
                return self._move(live, ("pending", "running"), "failed", error=str(value))
            if what == "cancelled":
                return self._move(live, ("pending", "running"), "cancelled", error="cancelled")
            # lost: the process that ran it died; the kind's effect rule decides
            kind = kind_of(live.record.kind, live.record.version, operation=id)
            live.started = False
            if kind.effect == "once" or live.manager is None:
                return self._move(live, ("running",), "unknown", error=str(value), detail=_UNKNOWN)
        self.start([id], live.manager)
        return True

    def _heartbeat(self, id: str, detail: Any) -> bool:
        """Record a running operation alive; tell its manager to stop it when another
        process asked (`sessions ops --cancel`: the store is asked at most every
        _ASK_EVERY_S seconds)."""
        with self._lock:
            live = self._ops.get(id)
            text = None if detail is None else str(detail)
            if live is None or not self._move(live, ("running",), "running", detail=text):
                return False
            now = time.monotonic()
            if live.stopping or now - live.asked_at < _ASK_EVERY_S:
                return True
            live.asked_at = now
            live.stopping = self._requested(id)
            manager = live.manager if live.stopping else None
        if manager is not None:
            manager.cancel(id)
        return True

    def _requested(self, id: str) -> bool:
        """Whether another process asked operation `id` to stop (the store records it)."""
        asked = getattr(self._store, "cancel_requested", None)
        return bool(asked is not None and asked(self.session.id, id))

    def _move(
        self,
        live: Live,
        expect: tuple[OperationState, ...],
        state: OperationState,
        *,
        result: Any = None,
        error: str | None = None,
        attempts: int | None = None,
        detail: str | None = None,
    ) -> bool:
        """Record the change (durably, when the session has a store), then make it."""
        if live.record.state not in expect:
            return False
        now = time.time()
        stored_result = None if result is None else masked_json(to_json(result))
        error, detail = masked_text(error), masked_text(detail)
        store = self._store
        if store is not None and not store.update_operation(
            self.session.id,
            live.record.id,
            expect,
            state,
            at=now,
            result=stored_result,
            error=error,
            attempts=attempts,
            detail=detail,
        ):
            return False
        changes: dict[str, Any] = {"state": state, "updated_at": now, "heartbeat_at": now}
        if state == "done":
            changes["result"] = None if stored_result is None else json.loads(stored_result)
        changes["error"] = error
        if attempts is not None:
            changes["attempts"] = attempts
        live.record = live.record.model_copy(update=changes)
        if state in FINISHED or state == "unknown":
            live.done.set()
        return True

    # -- waiting, polling, cancelling, settling ------------------------------------------
    def wait(self, ids: Sequence[str], timeout_s: float | None = None) -> list[OperationRecord]:
        """The operations' records once each is finished (or unknown), or as they are when
        `timeout_s` seconds have passed."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for id in ids:
            with self._lock:
                self._load()
                live = self._ops[id]
            if live.owner is not None and not isinstance(live, Shared):
                self._follow(live, deadline)
                continue
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            live.done.wait(left)
        return [self.get(id) for id in ids]

    def _follow(self, live: Live, deadline: float | None) -> None:
        """Wait for a fork's inherited operation as its parent's store rows tell, while a
        live process holds the parent (its writer lease): no one else will finish it."""
        store, owner = self._store, live.owner
        while store is not None and owner is not None:
            row = next((r for r in store.operations(owner) if r.id == live.record.id), None)
            if row is not None:
                live.record = record_of(row)
            if live.record.state in FINISHED or live.record.state == "unknown":
                live.done.set()
                return
            holder = store.holder(owner)
            if holder is None or holder.expired(time.time()) is not None:
                return  # its parent is not running: it stays as it is until resumed
            if deadline is not None and time.monotonic() >= deadline:
                return
            time.sleep(_FOLLOW_S)

    def cancel(self, id: str) -> OperationRecord:
        """Ask operation `id` to stop: a pending one is cancelled at once, a running one
        when its executor stops; a finished one stays as it is."""
        with self._lock:
            self._load()
            live = self._ops.get(id)
            if live is None:
                raise ValueError(f"this session has no operation {id!r}")
            if live.owner is not None:
                raise UsageError(_parents(id, live.owner, "cancel it there"))
            manager = live.manager
            if live.record.state == "pending":
                self._move(live, ("pending",), "cancelled", error="cancelled")
                live.started = True
        if manager is not None and live.record.state == "running":
            manager.cancel(id)
        return live.record

    def settle(
        self, id: str, *, result: object = None, rerun: bool = False, by: str = ""
    ) -> OperationRecord:
        """Settle an `unknown` operation by hand: it is done with `result`, or (rerun=True)
        pending again, to run when its tool call is resumed. Its event says who settled it
        (`by`) and how; AlreadySettled, naming them, when it was settled already."""
        with self._lock:
            self._load()
            live = self._ops.get(id)
            if live is None:
                raise UsageError(f"this session has no operation {id!r}")
            if live.owner is not None:
                raise UsageError(_parents(id, live.owner, "settle it there"))
            if live.record.state != "unknown":
                same = to_json(result) == to_json(live.record.result)
                if live.record.state == "done" and not rerun and same:
                    return live.record  # settled so already
                raise self._already(id, live.record.state)
            who = f" by {by}" if by else ""
            if rerun:
                detail = f"{SETTLED}{who}: run again"
                moved = self._move(live, ("unknown",), "pending", detail=detail)
                if moved:
                    live.done.clear()
                    live.started = False
            else:
                detail = f"{SETTLED}{who}: done with the result given"
                moved = self._move(live, ("unknown",), "done", result=result, detail=detail)
            if not moved:  # the store's row moved on meanwhile (another process settled it)
                row = next((r for r in self._store.operations(self.session.id) if r.id == id),
                           None) if self._store is not None else None  # fmt: skip
                raise self._already(id, live.record.state if row is None else row.state)
        return live.record

    def _already(self, id: str, state: str) -> AlreadySettled:
        """The refusal to settle operation `id`, in `state`: who settled it, when, how
        (its newest settle event), as the store records it."""
        events = getattr(self._store, "operation_events", None)
        found = [e for e in (events(self.session.id, id) if events else [])
                 if (e.detail or "").startswith(SETTLED)]  # fmt: skip
        said, by, at = "", None, None
        if found:
            last = found[-1]
            at = last.at
            said = f": {last.detail} at " + time.strftime("%Y-%m-%d %H:%M:%S UTC",
                                                          time.gmtime(last.at))  # fmt: skip
            head = (last.detail or "")[len(SETTLED) :]
            by = head[4:].split(": ", 1)[0] if head.startswith(" by ") else None
        return AlreadySettled(
            f"operation {id!r} is {state}, not unknown: only an unknown operation is settled"
            f"{said}; nothing changed (`openprogram sessions ops {self.session.id} "
            "--events` shows its history)",
            by=by,
            at=at,
            how=state,
        )

    def hand_back(self, reason: str) -> None:
        """This process stops running the session (`reason`: a SIGTERM drain): every
        operation it runs that is still pending or running is asked to stop, and recorded
        as no process runs it, by its kind's effect rule: a running `once` one `unknown`
        (it began: it may have happened), any other `pending` again (the next resumed
        run runs it). Each gets an event "handed back: ...". Reports its executor makes
        afterwards are not recorded."""
        with self._lock:
            lives = [
                live
                for live in self._ops.values()
                if live.owner is None
                and live.manager is not None
                and not live.handed
                and live.record.state in ("pending", "running")
            ]
            for live in lives:
                live.handed = True
        for live in lives:
            with suppress(Exception):  # it is recorded below either way
                live.manager.cancel(live.record.id)  # type: ignore[union-attr]
            kind = kind_of(live.record.kind, live.record.version, operation=live.record.id)
            with self._lock:
                if live.record.state == "running" and kind.effect == "once":
                    text = f"handed back: {reason} while it ran; {_UNKNOWN_BACK}"
                    self._move(live, ("running",), "unknown", error=text, detail=text)
                else:
                    text = f"handed back: {reason}; the next resumed run runs it"
                    self._move(live, ("pending", "running"), "pending", detail=text)
                live.started = False

    def results(self, node: Node, ids: Sequence[str]) -> object:
        """The results of a foreground tool call's operations (one value for one
        operation, else a list); raises EffectUnknown or OperationFailed."""
        records = self.wait(ids)
        for record in records:
            with self._lock:
                owner = self._ops[record.id].owner
            if owner is not None and record.state in ("pending", "running"):
                raise OperationFailed(
                    f"operation {record.id} ({record.kind}) of {node.name} is {record.state} "
                    f"in session {owner}, this fork's parent, which is not running: "
                    + _parents(record.id, owner, f"resume {owner} to finish it"),
                    node_id=node.id,
                    operation=record.id,
                    state=record.state,
                )
            if record.state == "unknown":
                raise EffectUnknown(
                    f"operation {record.id} ({record.kind}) of {node.name} was running when "
                    "its process died, and its kind is effect='once': whether it happened is "
                    "unknown, so it is not run again. Check, then settle it: "
                    f"session.settle({record.id!r}, result) or rerun=True, or `openprogram "
                    f"sessions settle {self.session.id} {record.id} --result JSON | --rerun`",
                    node_id=node.id,
                    call=node.name,
                    key=record.id,
                )
            if record.state != "done":
                raise OperationFailed(
                    f"operation {record.id} ({record.kind}) {record.state}: "
                    f"{record.error or record.state}",
                    node_id=node.id,
                    operation=record.id,
                    state=record.state,
                )
        values = [record.result for record in records]
        return values[0] if len(values) == 1 else values

    def pick_up_background(self, manager: OperationManager | None) -> None:
        """Start the session's unfinished background operations (a resumed session's)."""
        with self._lock:
            self._load()
            ids = [
                id
                for id, live in self._ops.items()
                if live.owner is None
                and live.record.background
                and live.record.state in ("pending", "running")
            ]
        if ids:
            self.start(ids, manager)


_UNKNOWN_BACK = "its kind is effect='once', so whether it happened is unknown: settle it"
SETTLED = "settled"
"""The start of an event's detail that records a settle: "settled by WHO: how"."""
_UNKNOWN = "its process died while it ran; its kind is effect='once', so it is not run again"
_FOLLOW_S = 0.05
"""How often a fork waiting for its parent's operation reads the parent's store rows."""


def hand_back(session: TrackedSession, reason: str) -> None:
    """Tracker.hand_back() of `session`'s tracker, if it has one (Session.close)."""
    with _trackers_lock:
        found = _trackers.get(session)
    if found is not None:
        found.hand_back(reason)


def _parents(id: str, owner: str, then: str) -> str:
    return (
        f"operation {id} belongs to session {owner}, which this fork shares it with; a "
        f"fork never runs, cancels or settles its parent's operations: {then}"
    )


_MASKED = (
    "not run again: its arguments held a secret value, which is stored masked ('***'), "
    "so the operation as stored is not the one its tool made; run the tool again"
)
_REQUESTED = "cancelled: asked to stop (openprogram sessions ops --cancel)"
_ASK_EVERY_S = 0.25
"""At most this often a heartbeat asks the store whether its operation was asked to stop."""
