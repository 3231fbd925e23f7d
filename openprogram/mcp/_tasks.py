"""MCP Tasks for `mcp serve`: a background tool's call (`operation_tool(background=True)`)
followed as a task: tasks/get, tasks/result, tasks/cancel and tasks/list.

The MCP SDK installed (2.3.0) defines the Tasks types and dispatches none of their
methods (it refuses a CreateTaskResult from tools/call), so the call answers at once
with its handle and the task's id in `_meta["io.modelcontextprotocol/related-task"]`,
the four methods are request handlers here, and the tasks capability is added to what
the server advertises. A task is a session of the server's store marked as one (its
info's extra); its id, "task-" and 128 random bits, is told only to the client that
started it, and an id that is not a task of this store is refused. Its state is its
operations' in the store, so any connection (a reconnected client, a restarted server)
finds it; a task whose server died is taken up by the next server asked about it, by
its operations' effect rule. Start at Tasks.
"""

from __future__ import annotations

import datetime
import json
import re
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from openprogram.agentic.function import AgenticFunction
from openprogram.core import _secrets
from openprogram.echo import elide, printable
from openprogram.errors import SessionLocked
from openprogram.mcp._fair import FairOperations
from openprogram.mcp._sdk import MCPError, mcp_types
from openprogram.operations.tracker import tracker
from openprogram.runtime.runtime import Runtime
from openprogram.session.session import Session
from openprogram.store import MemoryStore, open_store
from openprogram.store.format import SessionInfo

__all__ = [
    "DEFAULT_MAX_CLIENT_TASKS", "DEFAULT_MAX_TASKS", "DEFAULT_RUNNING", "MARK", "RELATED_TASK",
    "Tasks", "client",
]  # fmt: skip

RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The `_meta` key naming the task a result belongs to (MCP 2025-11-25)."""
MARK = "mcp_task"
"""The key of a task's session info extra (the tool it calls): what makes a session a task."""
_ID = re.compile(r"task-[0-9a-f]{32}")
_TTL_MS = 24 * 3600 * 1000  # how long a task is kept, as told to clients: its session's
_POLL_MS = 500
_PAGE = 100  # tasks per tasks/list page
_INVALID_PARAMS = -32602
_TAKEN_UP = "the server that started it stopped; this server took it up"
_RETRY_S = 2.0  # how often taking up a task a live process holds is tried again


DEFAULT_MAX_TASKS = 64
"""Tasks working at once in one server (`mcp serve --max-tasks`): a thread each."""
DEFAULT_MAX_CLIENT_TASKS = 16
"""Tasks working at once of one connection (`mcp serve --max-client-tasks`)."""
DEFAULT_RUNNING = 8
"""Task operations running at once, at most half of them one connection's (_fair.py)."""


class _Key:
    """A connection as a key: by identity (None: the server's own, for tasks it took up)."""

    __slots__ = ("_of",)

    def __init__(self, of: object) -> None:
        self._of = of

    def __hash__(self) -> int:
        return id(self._of)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and other._of is self._of


def _iso(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat()


def client(context: object) -> object:
    """The connection a request came over (the SDK makes a ServerSession per request and
    has no public name for the connection it holds), or None."""
    session = getattr(context, "session", None)
    return getattr(session, "_connection", None) or session


def _shown(value: object) -> str:
    """A client's id as an error message may quote it: short, escaped."""
    return printable(elide(repr(value), 80))


class Tasks:
    """The tasks of one server: background calls started, their sessions held open while
    their operations run, and the tasks/* handlers reading them from `store`."""

    def __init__(
        self,
        store: object,
        model: str | None,
        options: dict[str, Any],
        result: Callable[[Any], mcp_types.CallToolResult],
        error: Callable[[str], mcp_types.CallToolResult],
        *,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_client_tasks: int = DEFAULT_MAX_CLIENT_TASKS,
        running: int = DEFAULT_RUNNING,
    ) -> None:
        """`result` and `error` make what is sent back (MCP content, scrubbed of secrets)
        of a value and of an error message. At most `max_tasks` tasks work at once, at
        most `max_client_tasks` of one connection; their operations run `running` at a
        time, in turn across connections (_fair.py)."""
        self.max_tasks, self.max_client_tasks = max_tasks, max_client_tasks
        self._fair = FairOperations(running)
        self._working: dict[Any, int] = {}  # connection -> its tasks working now
        self._store = MemoryStore() if store is None else store  # a task is found again
        self._reader: Any = None
        self._model, self._options = model, options
        self._result, self._error = result, error
        self._live: dict[str, Any] = {}  # task id -> its session, while this server holds it
        self._taking: set[str] = set()  # task ids being taken up
        self._taken: set[str] = set()  # task ids this server took up
        self._failures: dict[str, str] = {}  # task id -> why it could not be taken up
        self._tried: dict[str, float] = {}  # task id -> when taking it up was last tried
        self._clients: weakref.WeakKeyDictionary[Any, list[str]] = weakref.WeakKeyDictionary()
        self._lock = threading.Lock()

    @staticmethod
    def offers(fn: object) -> bool:
        """Whether `fn` is served as a task (a background operation tool)."""
        return bool(getattr(fn, "background", False))

    def register(self, server: Any) -> None:
        """Serve tasks/get, tasks/result, tasks/cancel and tasks/list on the SDK's
        low-level `server`, and advertise them."""
        import anyio

        async def get(context: Any, params: Any) -> Any:
            task = await anyio.to_thread.run_sync(self._task, params.task_id)
            return mcp_types.GetTaskResult(**task.model_dump())

        async def result(context: Any, params: Any) -> Any:
            while (await anyio.to_thread.run_sync(self._task, params.task_id)).status == "working":
                await anyio.sleep(0.1)  # another process may run it: the store is read
            return await anyio.to_thread.run_sync(self._outcome, params.task_id)

        async def cancel(context: Any, params: Any) -> Any:
            await anyio.to_thread.run_sync(self._cancel, params.task_id)
            task = await anyio.to_thread.run_sync(self._task, params.task_id)
            return mcp_types.CancelTaskResult(**task.model_dump())

        async def listed(context: Any, params: Any) -> Any:
            return await anyio.to_thread.run_sync(self._list, client(context), params.cursor)

        server.add_request_handler("tasks/get", mcp_types.GetTaskRequestParams, get)
        server.add_request_handler("tasks/result", mcp_types.GetTaskPayloadRequestParams, result)
        server.add_request_handler("tasks/cancel", mcp_types.CancelTaskRequestParams, cancel)
        server.add_request_handler("tasks/list", mcp_types.PaginatedRequestParams, listed)
        capabilities = server.get_capabilities

        def with_tasks(*args: Any, **kwargs: Any) -> Any:
            found = capabilities(*args, **kwargs)
            calls = mcp_types.TasksToolsCapability(call=mcp_types.TasksCallCapability())
            tasks = mcp_types.ServerTasksCapability(
                list=mcp_types.TasksListCapability(),
                cancel=mcp_types.TasksCancelCapability(),
                requests=mcp_types.ServerTasksRequestsCapability(tools=calls),
            )
            return found.model_copy(update={"tasks": tasks})

        server.get_capabilities = with_tasks

    # -- starting ------------------------------------------------------------------------
    def start(
        self, fn: AgenticFunction[..., Any], arguments: dict[str, Any], client: object = None
    ) -> mcp_types.CallToolResult:
        """Run a background tool's call as a new task (blocking until the call has
        returned its handles): the CallToolResult naming its task. Its session stays
        open on a thread of its own until the call's operations end. `client`: the
        connection asking (its tasks/list lists the task)."""
        try:
            parsed = fn.arguments_model.model_validate(arguments)
        except ValidationError as exc:
            return self._error(f"invalid arguments for {fn.spec['name']}: {exc.errors()[0]['msg']}")
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        refused = self._admit(client)
        if refused is not None:
            return self._error(refused)
        task_id = f"task-{secrets.token_hex(16)}"
        try:
            self._stored().create_session(
                SessionInfo(id=task_id, created_at=time.time(), extra={MARK: fn.spec["name"]})
            )
        except Exception as exc:
            self._leave(client)
            return self._error(f"the task could not be recorded: {type(exc).__name__}: {exc}")
        ready = threading.Event()
        box: dict[str, Any] = {}
        operations = self._fair.for_client(_Key(client))

        def hold() -> None:
            try:
                with (
                    Session.open(self._store, task_id) as session,
                    Runtime(self._model, operations=operations, **self._options),
                ):
                    try:
                        box["value"] = value = fn(**kwargs)
                    except Exception as exc:
                        box["failed"] = f"{type(exc).__name__}: {exc}"
                        return
                    with self._lock:
                        self._live[task_id] = session
                    ready.set()
                    handles = value if isinstance(value, list) else [value]
                    ids = [h["operation"] for h in handles if isinstance(h, dict)]
                    tracker(session).wait(ids)  # its ends are recorded under its lease
            except Exception as exc:
                box.setdefault("failed", f"{type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._live.pop(task_id, None)
                self._leave(client)
                ready.set()

        threading.Thread(target=hold, daemon=True, name="openprogram-mcp-task").start()
        ready.wait()
        if client is not None:  # listed once its call has returned (its id is known)
            with self._lock:
                self._clients.setdefault(client, []).append(task_id)
        failed = box.get("failed")
        result = self._error(failed) if failed else self._result(box["value"])
        result.meta = {"openprogram/session": task_id, RELATED_TASK: {"taskId": task_id}}
        return result

    def _admit(self, client: object) -> str | None:
        """Count a new task of `client` as working; why not, when a limit is reached."""
        with self._lock:
            total = sum(self._working.values())
            mine = self._working.get(_Key(client), 0)
            if total >= self.max_tasks:
                return (
                    f"too many tasks: this server has {total} tasks working, the most it "
                    f"takes (max_tasks={self.max_tasks}, `mcp serve --max-tasks`); start "
                    "this one when one has ended (tasks/get tells)"
                )
            if mine >= self.max_client_tasks:
                return (
                    f"too many tasks: this connection has {mine} tasks working, the most one "
                    f"connection may have (max_client_tasks={self.max_client_tasks}, `mcp "
                    "serve --max-client-tasks`); wait for one to end (tasks/get) or cancel "
                    "one (tasks/cancel)"
                )
            self._working[_Key(client)] = mine + 1
        return None

    def _leave(self, client: object) -> None:
        """A task of `client` stopped working."""
        with self._lock:
            key = _Key(client)
            self._working[key] -= 1
            if not self._working[key]:
                del self._working[key]

    # -- taking up a task whose server died ----------------------------------------------
    def _take_up(self, task_id: str) -> None:
        """Hold `task_id`'s session and run its unfinished operations by their effect rule
        (a pending or idempotent one runs, a once one found running becomes unknown),
        unless a live process holds it (its lease): then it is that process's."""
        with self._lock:
            if task_id in self._live or task_id in self._taking:
                return
            now = time.monotonic()
            if now - self._tried.get(task_id, -_RETRY_S) < _RETRY_S:
                return  # a live process held it a moment ago
            self._tried[task_id] = now
            self._taking.add(task_id)
        started = threading.Event()
        taken_up = self._fair.for_client(_Key(None))  # its own client's: none is here

        def hold() -> None:
            try:
                with (
                    Session.open(self._store, task_id) as session,
                    Runtime(self._model, operations=taken_up, **self._options),
                ):
                    with self._lock:
                        self._live[task_id] = session
                        self._taken.add(task_id)
                    operations = tracker(session)
                    operations.pick_up_background(None)
                    started.set()
                    operations.wait([r.id for r in operations.records()])
            except SessionLocked:
                pass  # a live server runs it
            except Exception as exc:  # an unknown kind here, say: the task says so
                with self._lock:
                    self._failures[task_id] = f"{type(exc).__name__}: {exc}"
            finally:
                with self._lock:
                    self._live.pop(task_id, None)
                    self._taking.discard(task_id)
                started.set()

        threading.Thread(target=hold, daemon=True, name="openprogram-mcp-task-up").start()
        started.wait()

    # -- reading -------------------------------------------------------------------------
    def _stored(self) -> Any:
        """The store as an object (a path is opened once)."""
        store = self._store
        if isinstance(store, str):
            if self._reader is None:
                self._reader, _ = open_store(store)
            store = self._reader
        return store

    def _rows(self, task_id: object) -> list[Any]:
        """Task `task_id`'s operations; MCPError when it is no task of this store."""
        if not isinstance(task_id, str) or not _ID.fullmatch(task_id):
            raise MCPError(
                _INVALID_PARAMS,
                f"there is no task {_shown(task_id)}: a task id is 'task-' and 32 hex "
                "digits, as its tools/call answered",
            )
        store = self._stored()
        try:
            info = store.session(task_id)
        except Exception:
            info = None
        if info is None or MARK not in info.extra:
            raise MCPError(_INVALID_PARAMS, f"there is no task {task_id!r} in this server's store")
        return list(store.operations(task_id))

    def _task(self, task_id: str) -> Any:
        rows = self._rows(task_id)
        if any(row.state in ("pending", "running") for row in rows):
            with self._lock:
                mine = task_id in self._live or task_id in self._taking
            if not mine:  # its server may have died: take it up unless it lives
                self._take_up(task_id)
                rows = self._rows(task_id)
        states = {row.state for row in rows}
        status: mcp_types.TaskStatus
        if states & {"pending", "running"}:
            status = "working"
        elif not rows or states & {"failed", "unknown"}:
            status = "failed"
        elif "cancelled" in states:
            status = "cancelled"
        else:
            status = "completed"
        errors = "; ".join(f"{row.id}: {row.error}" for row in rows if row.error)
        notes = [_secrets.scrub(errors[:1000], patterns=True)] if errors else []
        notes += [  # the task's own id: no secret, though it looks like one
            f"{row.id} may have happened: settle it (openprogram sessions settle {task_id} "
            f"{row.id} --result JSON | --rerun, with this server's --store)"
            for row in rows
            if row.state == "unknown"
        ]
        with self._lock:
            if task_id in self._taken:
                notes.insert(0, _TAKEN_UP)
            failure = self._failures.get(task_id)
        if failure:
            notes.insert(0, _secrets.scrub(f"it could not be taken up here: {failure}"[:500]))
        if not rows:
            notes.append("the call made no operation (it failed)")
        now = time.time()
        return mcp_types.Task(
            task_id=task_id,
            status=status,
            status_message="; ".join(notes)[:2000] or None,
            created_at=_iso(min((row.created_at for row in rows), default=now)),
            last_updated_at=_iso(max((row.updated_at for row in rows), default=now)),
            ttl=_TTL_MS,
            poll_interval=_POLL_MS,
        )

    def _list(self, client: Any, cursor: str | None) -> Any:
        """tasks/list: the tasks `client` (this connection) started, _PAGE at a time; the
        transport gives no other identity, so a reconnected client follows its earlier
        tasks by their ids."""
        with self._lock:
            ids = list(self._clients.get(client, ()))
        start = 0
        if cursor is not None:
            if not cursor.isdigit() or len(cursor) > 9 or int(cursor) > len(ids):
                raise MCPError(
                    _INVALID_PARAMS, f"cursor {_shown(cursor)} is not one tasks/list gave"
                )
            start = int(cursor)
        page = ids[start : start + _PAGE]
        more = start + _PAGE < len(ids)
        return mcp_types.ListTasksResult(
            tasks=[self._task(id) for id in page],
            next_cursor=str(start + _PAGE) if more else None,
        )

    def _outcome(self, task_id: str) -> Any:
        """A finished task's result: its operations' results as the tool's call would
        have returned them, or the error."""
        task = self._task(task_id)
        rows = self._rows(task_id)
        if task.status != "completed":
            result = self._error(f"task {task_id} {task.status}: {task.status_message or ''}")
        else:
            values = [None if row.result is None else json.loads(row.result) for row in rows]
            result = self._result(values[0] if len(values) == 1 else values)
        result.meta = {RELATED_TASK: {"taskId": task_id}}
        return result

    def _cancel(self, task_id: str) -> None:
        rows = self._rows(task_id)
        with self._lock:
            session = self._live.get(task_id)
        for row in rows:
            if row.state not in ("pending", "running"):
                continue
            if session is not None:  # this server runs it
                tracker(session).cancel(row.id)
                continue
            ask = getattr(self._stored(), "request_cancel", None)
            if ask is None:
                raise MCPError(_INVALID_PARAMS, f"task {task_id} cannot be cancelled from here")
            ask(task_id, row.id, at=time.time(), by="an MCP client (tasks/cancel)")
