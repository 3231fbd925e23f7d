"""Session: the DAG of one run and where it is recorded.

Owns entering a session (making it the recorder for this context), recording calls
and inputs into its ContextDAG, and handing every change to its store. Start at
Session.__init__ and Session._enter_call.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import uuid
from contextvars import Token
from typing import Any

from openprogram import _context
from openprogram.dag import ContextDAG, Node

__all__ = ["Session", "current_session"]

log = logging.getLogger("openprogram")

current_session = _context.current_session


class Session:
    """A recorded run: `with Session(): ...` makes every decorated call record here.

    store: None or "memory" keeps the DAG in memory only.
    """

    def __init__(self, store: Any = None, id: str | None = None) -> None:
        if store not in (None, "memory"):
            from openprogram.errors import UsageError

            raise UsageError(f"store={store!r} is not supported yet; use None or 'memory'")
        self.id = id or uuid.uuid4().hex[:12]
        self.dag = ContextDAG()
        self._tokens: list[Token[Session | None]] = []
        self._inputs: dict[str, str] = {}
        self._lock = threading.Lock()

    # -- entering ------------------------------------------------------------------------
    def __enter__(self) -> Session:
        self._tokens.append(_context.session_var.set(self))
        _context.push_session(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _context.pop_session(self)
        if self._tokens:
            _context.session_var.reset(self._tokens.pop())

    # -- recording -----------------------------------------------------------------------
    def _enter_call(
        self, name: str, arguments: dict[str, Any], parent: str | None, settings: dict[str, Any]
    ) -> Node:
        if parent is not None and parent not in self.dag:
            parent = None
        return self.dag.add(
            "code", name, parent=parent, input=self.dag.jsonable(arguments), **settings
        )

    def _enter_llm(
        self, name: str, parent: str | None, parts: list[Any], meta: dict[str, Any]
    ) -> Node:
        """The llm node for an exchange about to be sent (a completed one when replayed)."""
        return self.dag.add("llm", name, parent=parent, input=parts, meta=meta)

    def _exit_call(self, node: Node, result: Any, exc: BaseException | None) -> None:
        if exc is None:
            self.dag.complete(node, self.dag.jsonable(result))
        elif isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
            self.dag.complete(node, None, status="cancelled", error=type(exc).__name__)
        else:
            self.dag.complete(node, None, status="error", error=f"{type(exc).__name__}: {exc}")

    def _resumed_output(self, node: Node, fn: Any) -> Any:
        """The value a resumed call returns instead of running: its recorded output."""
        return node.output

    def submit(self, text: str, *, input_id: str | None = None) -> Node:
        """Record input from outside as a top-level `user` node.

        Submitting an `input_id` seen before records nothing and returns the first node.
        """
        with self._lock:
            if input_id is not None and input_id in self._inputs:
                return self.dag.node(self._inputs[input_id])
            meta = {"input_id": input_id} if input_id is not None else {}
            node = self.dag.add("user", "user", input=text, status="completed", meta=meta)
            if input_id is not None:
                self._inputs[input_id] = node.id
            return node

    def __repr__(self) -> str:
        return f"Session(id={self.id!r}, nodes={len(self.dag)})"
