"""MCP Tasks for `mcp serve`: a background tool's call (`operation_tool(background=True)`)
followed as a task, by id, status, result and cancel.

The MCP SDK installed (2.3.0) dispatches none of the Tasks methods and refuses a
CreateTaskResult from tools/call, so the call answers at once with its handle and the
task's id in `_meta["io.modelcontextprotocol/related-task"]`, and `tasks/get`,
`tasks/result` and `tasks/cancel` are served as request handlers. A task is the call's
session: its id is the session's id and its state its operations' in the store, so it is
found again over any connection (on a durable store, by a restarted server too). The
call's session stays open until its operations end. Start at Tasks.
"""

from __future__ import annotations

import datetime
import threading
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from openprogram import _secrets
from openprogram.mcp._sdk import MCPError, mcp_types
from openprogram.operations.tracker import tracker
from openprogram.runtime import Runtime
from openprogram.session import Session
from openprogram.store import MemoryStore, open_store

__all__ = ["RELATED_TASK", "Tasks"]

RELATED_TASK = "io.modelcontextprotocol/related-task"
"""The `_meta` key naming the task a result belongs to (MCP 2025-11-25)."""
_TTL_MS = 24 * 3600 * 1000  # how long a task is kept, as told to clients: its session's
_POLL_MS = 500
_INVALID_PARAMS = -32602


def _iso(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).isoformat()


class Tasks:
    """The tasks of one server: background calls started, their sessions held open while
    their operations run, and the tasks/* handlers reading them from `store`."""

    def __init__(
        self,
        store: Any,
        model: str | None,
        options: dict[str, Any],
        result: Callable[[Any], Any],
        error: Callable[[str], Any],
    ) -> None:
        """`result` and `error` make what is sent back (MCP content, scrubbed of secrets)
        of a value and of an error message."""
        self._store = MemoryStore() if store is None else store  # a task is found again
        self._reader: Any = None
        self._model, self._options = model, options
        self._result, self._error = result, error
        self._live: dict[str, Any] = {}  # task id -> its session, while it records
        self._lock = threading.Lock()

    @staticmethod
    def offers(fn: Any) -> bool:
        """Whether `fn` is served as a task (a background operation tool)."""
        return bool(getattr(fn, "background", False))

    def register(self, server: Any) -> None:
        """Serve tasks/get, tasks/result and tasks/cancel on the SDK's low-level `server`."""

        async def get(context: Any, params: Any) -> Any:
            return mcp_types.GetTaskResult(**self._task(params.task_id).model_dump())

        async def result(context: Any, params: Any) -> Any:
            import anyio

            while self._task(params.task_id).status == "working":
                await anyio.sleep(0.1)  # another process may run it: the store is read
            return self._outcome(params.task_id)

        async def cancel(context: Any, params: Any) -> Any:
            self._cancel(params.task_id)
            return mcp_types.CancelTaskResult(**self._task(params.task_id).model_dump())

        server.add_request_handler("tasks/get", mcp_types.GetTaskRequestParams, get)
        server.add_request_handler("tasks/result", mcp_types.GetTaskPayloadRequestParams, result)
        server.add_request_handler("tasks/cancel", mcp_types.CancelTaskRequestParams, cancel)

    # -- starting ------------------------------------------------------------------------
    def start(self, fn: Any, arguments: dict[str, Any]) -> Any:
        """Run a background tool's call in its own session (blocking until the call has
        returned its handles): the CallToolResult naming its task. The session stays
        open on a thread of its own until the call's operations end."""
        try:
            parsed = fn._arguments_model.model_validate(arguments)
        except ValidationError as exc:
            return self._error(f"invalid arguments for {fn.spec['name']}: {exc.errors()[0]['msg']}")
        kwargs = {name: getattr(parsed, name) for name in parsed.model_fields_set}
        ready = threading.Event()
        box: dict[str, Any] = {}

        def hold() -> None:
            try:
                with Session(self._store) as session, Runtime(self._model, **self._options):
                    box["task"] = session.id
                    try:
                        box["value"] = value = fn(**kwargs)
                    except Exception as exc:
                        box["failed"] = f"{type(exc).__name__}: {exc}"
                        return
                    with self._lock:
                        self._live[session.id] = session
                    ready.set()
                    handles = value if isinstance(value, list) else [value]
                    ids = [h["operation"] for h in handles if isinstance(h, dict)]
                    tracker(session).wait(ids)  # its ends are recorded under its lease
            except Exception as exc:
                box.setdefault("failed", f"{type(exc).__name__}: {exc}")
            finally:
                with self._lock:
                    self._live.pop(box.get("task", ""), None)
                ready.set()

        threading.Thread(target=hold, daemon=True, name="openprogram-mcp-task").start()
        ready.wait()
        failed = box.get("failed")
        result = self._error(failed) if failed else self._result(box["value"])
        result.meta = {
            "openprogram/session": box.get("task"),
            RELATED_TASK: {"taskId": box.get("task")},
        }
        return result

    # -- reading -------------------------------------------------------------------------
    def _rows(self, task_id: str) -> list[Any]:
        store = self._store
        if isinstance(store, str):
            if self._reader is None:
                self._reader, _ = open_store(store)
            store = self._reader
        try:
            rows = store.operations(task_id)
        except Exception:
            rows = []
        if not rows:
            raise MCPError(_INVALID_PARAMS, f"there is no task {task_id!r}")
        return list(rows)

    def _task(self, task_id: str) -> Any:
        rows = self._rows(task_id)
        states = {row.state for row in rows}
        status: mcp_types.TaskStatus
        if states & {"pending", "running"}:
            status = "working"
        elif states & {"failed", "unknown"}:
            status = "failed"
        elif "cancelled" in states:
            status = "cancelled"
        else:
            status = "completed"
        errors = [row.error for row in rows if row.error]
        return mcp_types.Task(
            task_id=task_id,
            status=status,
            status_message=_secrets.scrub("; ".join(errors)[:1000], patterns=True) or None,
            created_at=_iso(min(row.created_at for row in rows)),
            last_updated_at=_iso(max(row.updated_at for row in rows)),
            ttl=_TTL_MS,
            poll_interval=_POLL_MS,
        )

    def _outcome(self, task_id: str) -> Any:
        """A finished task's result: its operations' results as the tool's call would
        have returned them, or the error."""
        import json

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
            ask = getattr(self._reader or self._store, "request_cancel", None)
            if ask is None:
                raise MCPError(_INVALID_PARAMS, f"task {task_id} cannot be cancelled from here")
            import time

            ask(task_id, row.id, at=time.time(), by="an MCP client (tasks/cancel)")
