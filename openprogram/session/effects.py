"""Declared side effects: the call ledger's idempotency keys, and settling a call whose
effect is unknown.

A call of `@agentic_function(effect=...)` carries `meta["effect"]` and `meta["key"]` on
its node, committed to the store before its body runs (store/recorder.py). session.py
asks this module when a resumed run meets such a call that never finished; a person
answers with settle(). Start at idempotency_key() and settle().
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any

from openprogram.agentic._resume import call_path, path_text, stored_value, top_level_chain
from openprogram.agentic.ask import RERUN, ask_to_settle
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.errors import EffectUnknown, StoreError, UsageError
from openprogram.operations.tracker import Tracker, tracker

__all__ = [
    "idempotency_key",
    "interrupted",
    "new_key",
    "settle",
    "settle_or_raise",
    "started",
    "unknown",
]

INTERRUPTED = ("running", "cancelled", "stopped", "unknown")
"""Statuses of a call whose body began and did not finish: it neither returned nor
raised an error of its own (the process died, it was cancelled, a gate stopped it)."""

_lock = threading.Lock()


def idempotency_key() -> str:
    """The idempotency key of the innermost running call declared with an effect: the
    same on every resume, fork replay and retry of that call, different for every other
    call. Pass it to an API that deduplicates by key (payments, e-mail, queues).

    Raises UsageError outside such a call."""
    session = _context.current_session()
    frame = session.dag.get(_context.frame_var.get())
    while frame is not None:
        key = frame.meta.get("key")
        if key is not None and frame.meta.get("effect") is not None:
            return str(key)
        frame = session.dag.get(frame.parent)
    raise UsageError(
        "idempotency_key() is only known inside a call declared with an effect: "
        "@agentic_function(effect='once') or effect='idempotent'"
        + ("" if _context.frame_var.get() is not None else " (it was called at top level)")
    )


def new_key(session: Any, name: str, parent: str | None) -> str:
    """The key of a new call of `name` in frame `parent`: derived from the session's id
    and the call's path (_resume.path_text: each frame's name and ordinal). Kept on the
    node, so a resumed or forked run reads it back rather than deriving it again."""
    dag = session.dag
    counts: dict[tuple[str | None, str], int] = session._effect_counts
    paths: dict[str | None, str] = session._effect_paths
    with _lock:
        count = counts.get((parent, name))
        if count is None:  # the first here in this process: count the recorded ones
            siblings = top_level_chain(dag) if parent is None else dag.children(parent)
            count = sum(1 for n in siblings if n.kind == "code" and n.name == name)
        counts[(parent, name)] = count = count + 1
        where = paths.get(parent)
        if where is None:
            frame = dag.get(parent)
            where = paths[parent] = (
                "" if frame is None else f"{path_text(call_path(dag, frame))} / "
            )
    text = f"{session.id}\n{where}{name} #{count}"
    return f"op-{session.id}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def started(
    session: Any, name: str, parent: str | None, value: Any, settings: dict[str, Any]
) -> Node:
    """The node of a new call with an effect (session._enter_call): its effect and key in
    its meta, its start committed (store/recorder.py commits such a start at once).
    Raises StoreError, recording the call as not run, when the store did not take it:
    its body must never run unknown to the store."""
    fields = settings.copy()  # the function's, shared: never changed
    effect = fields.pop("effect")
    meta = {**fields.pop("meta", {}), "effect": effect, "key": new_key(session, name, parent)}
    node: Node = session.dag.add("code", name, parent=parent, input=value, meta=meta, **fields)
    recorder = session._recorder if session.store is not None else None
    if recorder is None or node.seq in recorder.rows:
        return node
    error = "not run: its start could not be committed to the store"
    session.dag.complete(node, None, status="error", error=error)
    raise StoreError(
        f"{node.name} (node {node.id}) declares effect={node.meta.get('effect')!r}, and its "
        f"start could not be committed to {getattr(session.store, 'url', 'the store')}, so "
        "it was not run (the log says why the store failed)",
        node_id=node.id,
    )


def interrupted(node: Node) -> bool:
    """Whether `node` is an `effect="once"` call that began and did not finish, and no
    person said to run it again: a resumed run must not run its body."""
    return (
        node.meta.get("effect") == "once"
        and node.status in INTERRUPTED
        and node.meta.get("settled") != RERUN
    )


def unknown(session: Any, node: Node, by: str = "") -> EffectUnknown:
    """Record interrupted `node` as `unknown` (once; `by`: what interrupted it, else its
    status says) and the EffectUnknown to raise."""
    if node.status != "unknown":
        error = _UNKNOWN.format(was=by or node.status)
        session.dag.complete(node, None, status="unknown", error=error)
    where = path_text(call_path(session.dag, node))
    key = str(node.meta.get("key", ""))
    return EffectUnknown(
        f"{where} (node {node.id}, idempotency key {key}) was declared effect='once' and "
        "did not finish: whether its effect happened is unknown, so it is not run again. "
        "Look the effect up by its key, then settle it: session.settle(node_id, result) "
        "(the call returns result) or session.settle(node_id, rerun=True), or "
        f"`openprogram sessions settle {session.id} {node.id} --result JSON | --rerun`",
        node_id=node.id,
        call=node.name,
        key=key,
    )


_UNKNOWN = "unknown: the call began and did not finish ({was}); settle it"


def settle(session: Any, node_id: str, result: Any, *, rerun: bool) -> Node:
    """Session.settle: the body of an interrupted `once` call is known to have done its
    effect (the call returns `result` from now on) or not (`rerun`: it runs again, with
    the same key). Durable at once; takes the session's writer lease for the moment
    unless this session holds it."""
    node = session.dag.get(node_id)
    operations = tracker(session)
    if node is None and operations.find(node_id) is not None:
        return _settle_operation(session, operations, node_id, result, rerun=rerun)
    if node is None or node.kind != "code":
        waiting = [n.id for n in session.dag.nodes if n.meta.get("effect") == "once"
                   and n.status in INTERRUPTED]  # fmt: skip
        unknown_ops = [r.id for r in operations.records() if r.state == "unknown"]
        raise UsageError(
            f"no call {node_id!r} in session {session.id}; the calls to settle: {waiting!r}"
            + (f", the operations: {unknown_ops!r}" if unknown_ops else "")
        )
    if node.meta.get("effect") != "once":
        raise UsageError(
            f"{node.name} (node {node_id}) was not declared effect='once': only such a call "
            "waits to be settled (any other interrupted call runs again on resume)"
        )
    value = None if rerun else stored_value(node.name, result, session.dag.add_image, returned=True)
    if node.status not in INTERRUPTED:
        if node.status == "completed" and not rerun and node.output == value:
            return node  # settled so already
        raise UsageError(
            f"{node.name} (node {node_id}) is {node.status}, not waiting to be settled: "
            + ("it finished" if node.status == "completed" else "a resumed run runs it again")
        )
    held = session._holding
    session._claim()
    try:
        settled(session, node, value, rerun=rerun)
        session.flush()
    finally:
        if not held:  # the run that resumes takes the lease next
            session._release()
    return node


def _settle_operation(
    session: Any, operations: Tracker, id: str, result: Any, *, rerun: bool
) -> Node:
    """settle() of an `unknown` operation: done with `result`, or pending again (`rerun`),
    to run when its tool call is resumed; returns that tool call's node."""
    held = session._holding
    session._claim()
    try:
        record = operations.settle(id, result=result, rerun=rerun)
    finally:
        if not held:  # the run that resumes takes the lease next
            session._release()
    return session.dag.node(record.node)  # type: ignore[no-any-return]


def settled(session: Any, node: Node, value: Any, *, rerun: bool) -> None:
    """Record the settlement on `node` (the caller holds the writer lease)."""
    node.meta["settled_at"] = time.time()
    if rerun:
        if node.status != "unknown":
            session.dag.complete(
                node, None, status="unknown", error=_UNKNOWN.format(was=node.status)
            )
        node.meta["settled"] = RERUN
        session._write(node)
    else:
        node.meta["settled"] = "result"
        session.dag.complete(node, value)


_QUESTION = (
    "{call} (idempotency key {key}) was interrupted, and whether its effect happened is "
    'unknown. Look it up by its key. Answer "rerun" to run it again, or what it returned '
    "(JSON, or text)."
)


def settle_or_raise(session: Any, node: Node) -> None:
    """A resumed run met interrupted `node`: record it `unknown`, then have a person
    settle it when the runtime has an asker (`Runtime(ask=...)`): afterwards it is
    completed, or settled to run again. Raises EffectUnknown when there is nobody to
    ask, RunWaiting when the asker says "not now" (answer with session.answer)."""
    exc = unknown(session, node)
    answer = ask_to_settle(_QUESTION.format(call=exc.call, key=exc.key))
    if answer is None:
        raise exc
    rerun, result = answer
    value = None if rerun else stored_value(node.name, result, session.dag.add_image, returned=True)
    settled(session, node, value, rerun=rerun)
