"""Session: the DAG of one run, where it is recorded, and how it is reopened.

Owns entering a session (making it the recorder for this context), recording calls and
inputs into its ContextDAG, the store it writes through (store/; its writer lease in
_leasing.py), reopening, resuming a re-run (matching in _resume.py), forking (a stored
DAG is rebuilt in _loading.py) and idempotent inputs. Start at Session.__init__,
Session.open and Session.enter_call.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
import weakref
from asyncio import CancelledError
from collections.abc import Callable, Iterable
from contextlib import suppress
from contextvars import Token
from typing import Any, cast

from openprogram.agentic import _drain, questions
from openprogram.agentic._resume import Resumer, stored_value
from openprogram.core import _context, _secrets
from openprogram.core.dag import ContextDAG, Node
from openprogram.errors import (
    EffectUnknown,
    RunStopped,
    RunWaiting,
    UsageError,
)
from openprogram.operations.tracker import hand_back
from openprogram.session import effects
from openprogram.session._leasing import Leasing
from openprogram.session._loading import load_dag, restore_branches, shared_history
from openprogram.session._resuming import Resuming
from openprogram.store.base import Store
from openprogram.store.blobs import StoredBlobs
from openprogram.store.events import Follow, NodeEvents
from openprogram.store.format import (
    NodeRow,
    SessionInfo,
    check_id_size,
    decode_node,
    image_refs,
)
from openprogram.store.lease import new_owner
from openprogram.store.open import open_store
from openprogram.store.recorder import Recorder

__all__ = ["Session", "current_frame", "current_session"]

log = logging.getLogger("openprogram")


def current_session() -> Session:
    """The session that records here: this context's (`with Session()`); else, in a plain
    thread, the one session live in the process; else a process-wide default in-memory
    session. Raises UsageError when this context has none and several are live."""
    return cast(Session, _context.current_session())  # only a Session enters itself


def current_frame() -> Node | None:
    """The code node of the agentic function running here, or None at top level."""
    frame = _context.frame_id()
    return None if frame is None else current_session().dag.get(frame)


# what ends a once body unfinished, so that whether its effect happened is unknown
_INTERRUPTIONS = (CancelledError, KeyboardInterrupt, GeneratorExit, RunStopped, EffectUnknown)


class Session(Resuming, Leasing):
    """A recorded run: `with Session(): ...` makes every decorated call record here.

    store: None or "memory" keeps the DAG in memory only; a file path or
        "sqlite:///file.db" records into SQLite; "postgresql://..." into PostgreSQL; a
        Store object (e.g. MemoryStore()) into that store.
    id: the session's id in the store (default: a new random id); raises UsageError
        when the store has it already (reopen it with Session.open).

    A session takes its store's writer lease when it is entered or records an input,
    and gives it up when closed: a second writer of the same session gets SessionLocked.
    """

    def __init__(self, store: object = None, id: str | None = None) -> None:
        _check_id(id)
        resolved, owns = open_store(store)
        self._setup(resolved, owns, id or uuid.uuid4().hex[:12])
        if self.store is not None:
            try:
                self.store.create_session(self.info)
            except BaseException:
                self.close()
                raise
            self._record_into_store(())

    def _setup(self, store: Store | None, owns: bool, id: str) -> None:
        self.id = id
        self.dag = ContextDAG()
        self.store = store
        self.info = SessionInfo(id=id, created_at=time.time())
        self._owns_store = owns
        self._tokens: list[Token[_context.CallContext]] = []
        self._inputs: dict[str, str] = {}
        self._lock = threading.Lock()
        self._recorder: Recorder | None = None
        self._resumer: Resumer | None = None
        self._adapters: dict[Callable[..., Any], Any] = {}
        self._owner = new_owner()
        self._holding = False
        self._adopted = False  # the store held the lease before the session was read
        self._unrecorded = 0
        self._drains = False  # this session installed the SIGTERM handler (_drain.py)
        self._stop_reason: str | None = None  # stop(): end the run at its next boundary
        self._shared: dict[str, str] = {}  # a fork's inherited node -> whose call it is
        _secrets.refresh()  # what is written from now on is scrubbed of today's keys

    def _record_into_store(self, stored_blobs: Any, rows: Iterable[int] = ()) -> None:
        assert self.store is not None
        self._recorder = Recorder(self.store, self.id, self.dag, stored_blobs, rows)
        self.dag.listeners.append(self._recorder)
        _recording.add(self)

    def _detach(self) -> None:
        """In a fork child: from now on this session records into the child's memory
        only, like Session(None): no store writes, no lease, no journal (the parent
        still writes it). Its DAG is the child's copy; failed_writes keeps its count."""
        self._lock = threading.Lock()  # another thread may have held it at the fork
        if self._recorder is not None:
            with suppress(ValueError):
                self.dag.listeners.remove(self._recorder)
            self._recorder.detach()
        self.store, self._owns_store, self._holding = None, False, False
        self._owner = new_owner()

    # -- reopening -----------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        store: object,
        id: str,
        *,
        resume: bool = False,
        create: bool = False,
        writer: str | None = None,
    ) -> Session:
        """Reopen recorded session `id` of `store`, with its DAG loaded.

        resume=True: a program re-run inside `with session:` gets the recorded outputs
        of completed calls without running them, replays recorded llm exchanges and
        continues live after the recorded prefix (docs/sessions.md). create=True: when
        the store has no session `id`, start it (as `Session(store, id=id)`), so one call
        serves the first run and every resumed one. Raises UsageError when the store has
        no such session (and create is False), ResumeDivergence (during the re-run) when
        a call's input differs from the recording at the same place.

        writer: the writer id whose lease on session `id` the store holds already,
        taken before the session was read (store.adopt(); openprogram.runs takes it in
        the statement that claims the run): the session records as that writer, and
        entering it neither takes the lease again nor checks for records made since it
        was read (none can be).
        """
        _check_id(id)
        resolved, owns = open_store(store)
        if resolved is None:
            raise UsageError(
                f"Session.open({store!r}, ...) needs a store: a session without one keeps "
                "nothing to reopen. Record with Session('run.db') or Session(MemoryStore())"
            )
        session: Session = cls.__new__(cls)
        session._setup(resolved, owns, id)
        if writer is not None:
            session._owner, session._adopted = writer, True
        try:
            info = resolved.session(id)
            if info is None and create:
                session.close()
                return cls(resolved if not owns else store, id=id)
            if info is None:
                known = [s.id for s in resolved.list_sessions()][-10:]
                raise UsageError(f"no session {id!r} in {resolved.url}; recent ones: {known!r}")
            session.info = info
            session._load(info)
        except BaseException:
            session.close()
            raise
        if resume:
            session._resumer = Resumer(session.dag)
        return session

    def _load(self, info: SessionInfo) -> None:
        assert self.store is not None
        rows: set[int] = set()
        dag = load_dag(self.store, info, rows=rows, owners=self._shared)
        stored: set[str] = set()
        for node in dag.nodes:
            image_refs(node.input, stored)
            image_refs(node.output, stored)
            if node.kind == "user" and node.meta.get("input_id") is not None:
                self._inputs.setdefault(node.meta["input_id"], node.id)
        dag.blobs = StoredBlobs(self.store.blob, stored)
        self.dag = dag
        self._record_into_store(stored, rows)

    @property
    def failed_writes(self) -> int:
        """Records that failed so far: writes the store refused, and calls that could not
        be recorded at all (each is logged; the program ran on)."""
        refused = 0 if self._recorder is None else self._recorder.failures
        return refused + self._unrecorded

    def not_recorded(self, name: str, parent: str | None, exc: BaseException) -> None:
        """Count and note a call whose node could not be made or completed: on its
        enclosing frame's `meta["unrecorded"]` (the session's log otherwise)."""
        self._unrecorded += 1
        frame = self.dag.get(parent)
        if frame is not None:
            entries = frame.meta.setdefault("unrecorded", [])
            if len(entries) < 20:
                entries.append(f"{name}: {type(exc).__name__}: {_secrets.scrub(str(exc))}"[:500])

    @property
    def resuming(self) -> bool:
        """Whether calls are matched against the recording (Session.open(resume=True))."""
        return self._resumer is not None

    # -- entering ------------------------------------------------------------------------
    def __enter__(self) -> Session:
        if not self._tokens:
            self._claim()
            self._drains = _drain.install()
        self._tokens.append(_context.enter(session=self))
        _context.push_session(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        _context.pop_session(self)
        if self._tokens:
            _context.leave(self._tokens.pop())
        if not self._tokens:
            try:
                if self._resumer is not None:
                    self._cancel_leftovers(None)
                self.close()
            finally:
                if self._drains:
                    self._drains = False
                    _drain.uninstall()

    def close(self) -> None:
        """Commit what waits to be recorded, give up the writer lease, and release the
        store's connection if this session opened it (a later record reconnects).
        Called when the outermost `with` ends. After a SIGTERM drain, the operations
        this process runs for the session are handed back first (recorded as no process
        runs them: operations/tracker.py's hand_back)."""
        if _drain.requested[0] and self._holding:
            try:
                hand_back(self, f"the process stopped ({_drain.REASON})")
            except Exception as exc:  # the store failed: they read as they were
                log.warning("openprogram: could not hand back the operations of %s: %s",
                            self.id, exc)  # fmt: skip
        if self._recorder is not None:
            self._recorder.close()  # commits, and removes its journal
        self._release()
        if self.store is not None and self._owns_store:
            self.store.close()

    def flush(self) -> bool:
        """Make every call recorded so far durable now (docs/sessions.md#durability says
        when that happens by itself); False when a record failed (see failed_writes)."""
        return True if self._recorder is None else self._recorder.flush()

    @property
    def recorder(self) -> Recorder | None:
        """What writes this session's nodes into its store; None without a store (also
        in a fork child, which records into its memory only)."""
        return self._recorder if self.store is not None else None

    def commit_with(
        self, node: Node, write: Callable[[NodeRow | None, dict[str, bytes]], None]
    ) -> None:
        """Record `node` as created through `write(row, images)`, the caller's own
        transaction with rows of its own (the operations a tool call made commit with
        its node so); `row` is None without a store. What was recorded before is
        committed first: nothing older of the node is written after it."""
        if self._recorder is None:
            write(None, {})
        else:
            self._recorder.commit_with(node, write)

    def stop(self, reason: str) -> None:
        """Stop this session's run at its next node boundary, from any thread: the call or
        llm exchange about to begin raises RunStopped(reason) instead (an `effect="once"`
        body is let finish first), as a SIGTERM drains a process. openprogram.runs uses
        it to cancel a run, or end one whose writer lease was taken over."""
        self._stop_reason = reason

    def events(self, since: int = 0, *, wait: bool = True) -> NodeEvents:
        """Each node of this session as it is committed to the store — by any process —
        and again whenever its stored status changes, in the order seen: iterate with
        `for` or `async for`. `since`: a seq; earlier nodes count as seen (their later
        changes still come). wait=False: stop once what is stored now was yielded.
        PostgreSQL pushes (LISTEN/NOTIFY); SQLite is looked at every 50 ms (no query
        unless the file changed). UsageError without a store."""
        if self.store is None:
            raise UsageError(
                "session.events() follows what is recorded in a store; this session has none"
            )
        return NodeEvents(Follow(self.store, self.id, since, wait=wait))

    # -- recording -----------------------------------------------------------------------
    def enter_call(
        self, name: str, arguments: dict[str, Any], parent: str | None, settings: dict[str, Any]
    ) -> Node:
        """The code node of a call about to run (a completed one: do not run it, it was
        resumed). Raises ResumeDivergence when a resumed run calls with another input
        at a recorded place; function.py lets only that error through to the caller."""
        if _drain.requested[0] or self._stop_reason is not None:  # stop at this boundary
            _drain.check(self.dag, parent, self._stop_reason or _drain.REASON)
        stored = settings  # what the node keeps: not on_code_change, read on resume only
        if "on_code_change" in settings:
            stored = {k: v for k, v in settings.items() if k != "on_code_change"}
        if parent is not None and parent not in self.dag:
            parent = None
        hidden = settings.get("hidden_inputs", ())
        value = stored_value(name, arguments, self.dag.add_image, hidden=hidden)
        if self._resumer is not None:
            resumed = self._resume("code", name, parent, value, settings, arguments)
            if resumed is not None:
                return resumed
        if settings.get("effect") is not None:  # committed, with its key, before it runs
            return effects.started(self, name, parent, value, stored)
        return self.dag.add("code", name, parent=parent, input=value, **stored)

    def enter_llm(
        self, name: str, parent: str | None, content: str | list[Any], meta: dict[str, Any]
    ) -> Node:
        """The llm node for an exchange about to be sent (a completed one when replayed);
        `content` is its input: llm()'s string as given, or the parts."""
        if _drain.requested[0] or self._stop_reason is not None:  # stop at this boundary
            _drain.check(self.dag, parent, self._stop_reason or _drain.REASON)
        if self._resumer is not None:
            resumed = self._resume("llm", name, parent, content, meta, content)
            if resumed is not None:
                return resumed
        return self.dag.add("llm", name, parent=parent, input=content, meta=meta)

    def exit_call(self, node: Node, result: object, exc: BaseException | None) -> None:
        if self._resumer is not None and node.id in self._resumer.reused:
            self._cancel_leftovers(node.id)
        if exc is None:
            value = stored_value(node.name, result, self.dag.add_image, returned=True)
            if node.meta.get("waiting_on"):  # it returned, suspended (gui_agent)
                self.dag.complete(node, value, status="waiting")
            else:
                self.dag.complete(node, value)
        elif isinstance(exc, RunWaiting):  # an ask_user below has no answer yet
            node.meta["waiting_on"] = getattr(exc.question, "id", None)
            self.dag.complete(node, None, status="waiting", error=f"RunWaiting: {exc}")
        elif node.meta.get("effect") == "once" and isinstance(exc, _INTERRUPTIONS):
            effects.unknown(self, node, by=type(exc).__name__)  # it began: did it pay?
        elif isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt, GeneratorExit)):
            self.dag.complete(node, None, status="cancelled", error=type(exc).__name__)
        elif isinstance(exc, RunStopped):  # a gate or budget ended it: not a failure
            node.meta["stop_reason"] = exc.reason
            self.dag.complete(node, None, status="stopped", error=f"{type(exc).__name__}: {exc}")
        else:
            self.dag.complete(node, None, status="error", error=f"{type(exc).__name__}: {exc}")

    def rewrite(self, node: Node) -> None:
        """Record `node` again as it is now, with what changed in place (its meta)."""
        if self._recorder is not None:
            self._recorder("created", node)

    def shared_from(self, node_id: str) -> str | None:
        """The id of the session whose call node `node_id` is, when this fork shares it
        with that session (its parent, or theirs); None when the node is this session's
        own."""
        return self._shared.get(node_id)

    # -- effects -------------------------------------------------------------------------
    def settle(
        self, node_id: str, result: object = None, *, rerun: bool = False, by: str | None = None
    ) -> Node:
        """Settle an `effect="once"` call that was interrupted (status `unknown`): its
        effect happened and the call returned `result` (a resumed run gets it without
        running the call), or, with `rerun=True`, it did not (a resumed run runs it again,
        with the same idempotency key). `node_id` may also name an `unknown` operation
        (session.operations()): it is done with `result`, or pending again, to run when
        its tool call is resumed. Durable at once, with who settled it (`by`, default
        "user@host pid N") and when; returns the node (an operation's: its tool call).

        A call is settled once: settling is a compare-and-set on the stored node, so of
        two settles through two Sessions or processes only the first lands; the same
        settle again is a no-op. AlreadySettled (a UsageError) for one settled or
        finished already, naming who settled it, when and how; UsageError for a node
        that is no such call, or a fork's call it shares with its parent (settle it in
        the parent)."""
        return effects.settle(self, node_id, result, rerun=rerun, by=by)

    # -- questions -----------------------------------------------------------------------
    def operations(self) -> list[Any]:
        """Every operation this session's tools returned (OperationRecord: kind, args,
        state, result), oldest first; docs/operations.md."""
        from openprogram.operations.tool import session_operations

        return session_operations(self)

    def pending(self) -> list[questions.Question]:
        """The questions this session's run waits on (ask_user with no answer yet), oldest
        first; answer them with answer()."""
        return questions.pending(self.dag)

    def answer(
        self, question_id: str, value: object, *, by: str | None = None
    ) -> questions.Question:
        """Record `value` as the answer to question `question_id`; returns the Question.

        The answer completes the waiting `ask_user` node (durable at once), with who gave
        it (`by`, default "user@host pid N") and when; the program re-run under
        Session.open(store, id, resume=True) gets it from that call. An answer is final:
        it is a compare-and-set on the stored question, so of two answers given through
        two Sessions or processes only the first lands; the same answer again is a no-op.
        UsageError for an unknown question, an answer that does not fit its choices or
        schema, or a question answered otherwise already (naming who answered, and when).
        """
        node = questions.find(self.dag, question_id)
        asked = questions.question(node)
        value = questions.check(asked, value)
        if by is not None and (not isinstance(by, str) or not by.strip()):
            raise UsageError(f"by={by!r} must name who answers, as text")
        if node.status != "waiting":
            questions.settled(asked, node, value)
            return asked
        with self.lease():
            at, who = time.time(), (by or questions.answerer())[:200]
            if self._recorder is not None:
                done = questions.answered(node, value, self.dag, at=at, by=who)
                stored = self._recorder.answer(done)
                if stored is not None:  # another Session or process answered first
                    questions.settled(asked, decode_node(stored, self.id), value)
                    return asked
            with self._lock:  # and in this process, another thread
                if node.status != "waiting":
                    questions.settled(asked, node, value)
                    return asked
                node.meta.update(answered_at=at, answered_by=who)
                self.dag.complete(node, value)
            self.flush()
        return asked

    # -- inputs and forks ----------------------------------------------------------------
    def submit(self, text: str, *, input_id: str | None = None) -> Node:
        """Record input from outside as a top-level `user` node.

        Submitting an `input_id` seen before (also in an earlier process, once reopened)
        records nothing and returns the first node.
        """
        self._claim()
        with self._lock:
            if input_id is not None and input_id in self._inputs:
                return self.dag.node(self._inputs[input_id])
            meta = {"input_id": input_id} if input_id is not None else {}
            node = self.dag.add("user", "user", input=text, status="completed", meta=meta)
            if input_id is not None:
                self._inputs[input_id] = node.id
            return node

    def fork(self, at: str, *, id: str | None = None) -> Session:
        """A new session on a branch that shares this one's history up to node `at`.

        The fork holds the DAG as it was when `at` finished: the top-level calls up to
        the one containing `at`, with calls still open then (at's callers) shown as
        running. New top-level nodes of the fork follow that call on branch
        "fork-<id>". Neither session ever sees the other's later nodes. In a store, the
        fork is recorded as a session of its own that refers to this one.
        Raises UsageError for an unknown node or one still running.
        """
        node = self.dag.node(at)
        if node.status == "running":
            raise UsageError(
                f"cannot fork at node {at!r} ({node.name}): it is still running; "
                "fork at a finished node"
            )
        self.flush()  # the fork's history is read from this session's stored rows
        _check_id(id)
        fork_id = id or uuid.uuid4().hex[:12]
        cut = node.end_seq if node.end_seq is not None else node.seq
        info = SessionInfo(
            id=fork_id, created_at=time.time(), parent=self.id, at=at, cut=cut,
            branch=f"fork-{fork_id}",
        )  # fmt: skip
        child: Session = Session.__new__(Session)
        child._setup(self.store, self._owns_store, fork_id)
        child.info = info
        refs: set[str] = set()
        for copy in shared_history(self.dag, node, cut):
            child._shared[copy.id] = self._shared.get(copy.id, self.id)
            child.dag.restore(copy)
            image_refs(copy.input, refs)
            image_refs(copy.output, refs)
            if copy.kind == "user" and copy.meta.get("input_id") is not None:
                child._inputs.setdefault(copy.meta["input_id"], copy.id)
        restore_branches(child.dag, info)
        parent_blobs = self.dag.blobs
        child.dag.blobs = StoredBlobs(parent_blobs.get, refs)
        if self.store is not None:
            self.store.create_session(info)
            sent = set(self._recorder.sent) if self._recorder is not None else set()
            if isinstance(parent_blobs, StoredBlobs):
                sent |= parent_blobs.stored
            child._record_into_store(refs & sent)
        return child

    def __repr__(self) -> str:
        where = "" if self.store is None else f", store={self.store.url!r}"
        return f"Session(id={self.id!r}, nodes={len(self.dag)}{where})"

    # -- a fork of the process -----------------------------------------------------------
    @staticmethod
    def _detach_in_child() -> None:
        """In a fork child: every session that records into a store records into the
        child's memory only (_detach)."""
        for session in list(_recording):
            Session._detach(session)
        _recording.clear()

    if hasattr(os, "register_at_fork"):  # registered in the class, whose privates it uses
        os.register_at_fork(after_in_child=_detach_in_child)


_recording: weakref.WeakSet[Session] = weakref.WeakSet()
"""The sessions that record into a store (detached in a fork child)."""


def _check_id(id: object) -> None:
    """UsageError for a session id no store can hold: not text, not UTF-8 (a lone
    surrogate, as a command line's undecodable bytes become), or too long to index."""
    if id is None:
        return
    if not isinstance(id, str):
        raise UsageError(f"id={id!r} must be a string (the session's id in its store)")
    try:
        id.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"id={id!r} is not valid text (it holds a lone surrogate, such as undecodable "
            "bytes on a command line become); give the session id as UTF-8 text"
        ) from None
    check_id_size(id)
