"""Declared side effects: the call ledger's idempotency keys, and settling a call whose
effect is unknown.

A call of `@agentic_function(effect=...)` carries `meta["effect"]` and `meta["key"]` on
its node, committed to the store before its body runs (store/recorder.py). session.py
asks this module when a resumed run meets such a call that never finished; a person
answers with settle(), a compare-and-set on the stored node (a call is settled once,
whoever settles it). A fork never settles, re-runs or cancels a `once` call it shares
with its parent. Start at idempotency_key() and settle().
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any, Protocol

from openprogram.agentic._resume import call_path, path_text, stored_value, top_level_chain
from openprogram.agentic.ask import RERUN, ask_to_settle
from openprogram.agentic.questions import answerer
from openprogram.core import _context
from openprogram.core.dag import ContextDAG, Node
from openprogram.echo import printable
from openprogram.errors import AlreadySettled, EffectUnknown, SessionLocked, StoreError, UsageError
from openprogram.operations.tracker import TrackedSession, Tracker, tracker
from openprogram.store.format import NodeRow, decode_node
from openprogram.store.recorder import Recorder

__all__ = [
    "EffectSession",
    "claim_rerun",
    "idempotency_key",
    "interrupted",
    "new_key",
    "settle",
    "settle_or_raise",
    "settlement",
    "shared",
    "started",
    "unknown",
]

INTERRUPTED = ("running", "cancelled", "stopped", "unknown")
"""Statuses of a call whose body began and did not finish: it neither returned nor
raised an error of its own (the process died, it was cancelled, a gate stopped it)."""


class EffectSession(TrackedSession, Protocol):
    """What this module uses of its session (session.py's Session, which sits above it),
    besides what the session's operations tracker uses."""

    @property
    def dag(self) -> ContextDAG: ...

    @property
    def recorder(self) -> Recorder | None: ...

    @property
    def lock(self) -> threading.Lock: ...

    def lease(self) -> AbstractContextManager[None]: ...

    def flush(self) -> bool: ...

    def rewrite(self, node: Node) -> None: ...

    def shared_from(self, node_id: str) -> str | None: ...


class _Ordinals:
    """new_key's memory of one session: how many calls of each name each frame made so
    far, and each frame's call path."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str | None, str], int] = {}
        self.paths: dict[str | None, str] = {}


_ordinals: weakref.WeakKeyDictionary[EffectSession, _Ordinals] = weakref.WeakKeyDictionary()
_lock = threading.Lock()  # guards _ordinals and what it holds


def idempotency_key() -> str:
    """The idempotency key of the innermost running call declared with an effect: the
    same on every resume, fork replay and retry of that call, different for every other
    call. Pass it to an API that deduplicates by key (payments, e-mail, queues).

    Raises UsageError outside such a call."""
    session = _context.current_session()
    frame = session.dag.get(_context.frame_id())
    while frame is not None:
        key = frame.meta.get("key")
        if key is not None and frame.meta.get("effect") is not None:
            return str(key)
        frame = session.dag.get(frame.parent)
    raise UsageError(
        "idempotency_key() is only known inside a call declared with an effect: "
        "@agentic_function(effect='once') or effect='idempotent'"
        + ("" if _context.frame_id() is not None else " (it was called at top level)")
    )


def new_key(session: EffectSession, name: str, parent: str | None) -> str:
    """The key of a new call of `name` in frame `parent`: derived from the store's
    identity (a store without one: none), the session's id and the call's path
    (_resume.path_text: each frame's name and ordinal). Kept on the node, so a resumed
    or forked run reads it back rather than deriving it again."""
    dag = session.dag
    with _lock:
        ordinals = _ordinals.get(session)
        if ordinals is None:
            ordinals = _ordinals[session] = _Ordinals()
        counts, paths = ordinals.counts, ordinals.paths
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
    # the store's identity too: one session id in two stores (two deployments, two
    # tenants' files) never derives one key, which a provider would take as one charge
    store = getattr(session, "store", None)
    identity = getattr(store, "identity", "") if store is not None else ""
    text = f"{session.id}\n{where}{name} #{count}"
    if identity:
        text = f"{identity}\n{text}"
    return f"op-{session.id}-{hashlib.sha256(text.encode()).hexdigest()[:24]}"


def started(
    session: EffectSession, name: str, parent: str | None, value: object, settings: dict[str, Any]
) -> Node:
    """The node of a new call with an effect (session.enter_call): its effect and key in
    its meta, its start committed (store/recorder.py commits such a start at once).
    Raises StoreError, recording the call as not run, when the store did not take it:
    its body must never run unknown to the store."""
    fields = settings.copy()  # the function's, shared: never changed
    effect = fields.pop("effect")
    meta = {**fields.pop("meta", {}), "effect": effect, "key": new_key(session, name, parent)}
    node: Node = session.dag.add("code", name, parent=parent, input=value, meta=meta, **fields)
    recorder = session.recorder
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


def settlement(node: Node) -> dict[str, Any] | None:
    """How `node` was last settled, `{"how": "result" | "rerun", "by": ..., "at": ...}`,
    or None when it never was (an older record: what its meta says)."""
    entries = node.meta.get("settlements")
    if isinstance(entries, list) and entries and isinstance(entries[-1], dict):
        return dict(entries[-1])
    how = node.meta.get("settled")
    if how is None:
        return None
    return {"how": how, "by": node.meta.get("settled_by"), "at": node.meta.get("settled_at")}


def _settleable(row: NodeRow) -> bool:
    """The compare of settling (and of recording a call `unknown`): the stored node is
    still an interrupted `once` call that nobody settled."""
    node = decode_node(row)
    return (
        node.meta.get("effect") == "once"
        and node.status in INTERRUPTED
        and node.meta.get("settled") is None
    )


def unknown(
    session: EffectSession, node: Node, by: str = "", *, stored: bool = False
) -> EffectUnknown:
    """Record interrupted `node` as `unknown` (once; `by`: what interrupted it, else its
    status says) and the EffectUnknown to raise. `stored`: a resumed run found it so;
    it is recorded only while the store still holds it unsettled (SessionLocked when
    another Session or process settled it since this one loaded it)."""
    if node.status != "unknown":
        error = _UNKNOWN.format(was=by or node.status)
        if stored:
            _swap(session, node, _settleable, status="unknown", output=None, error=error)
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


def shared(session: EffectSession, node: Node) -> EffectUnknown | None:
    """The error for `once` call `node` when fork `session` shares it with a parent (and
    it did not finish as shared): only the session whose call it is settles, re-runs or
    cancels it. None when it is the session's own."""
    owner = session.shared_from(node.id)
    if owner is None or node.meta.get("effect") != "once":
        return None
    where = path_text(call_path(session.dag, node))
    key = str(node.meta.get("key", ""))
    return EffectUnknown(
        f"{where} (node {node.id}, idempotency key {key}) is an effect='once' call this "
        f"fork shares with session {owner}, where it is its call ({node.status} as this "
        "fork shares it): a fork never settles, re-runs or cancels its parent's once "
        f"call. Settle it in {owner} (`openprogram sessions settle {owner} {node.id} "
        f"--result JSON | --rerun`) or resume {owner}, then fork {owner} again from a "
        "node after it finished",
        node_id=node.id,
        call=node.name,
        key=key,
    )


def settle(
    session: EffectSession, node_id: str, result: object, *, rerun: bool, by: str | None = None
) -> Node:
    """Session.settle: the body of an interrupted `once` call is known to have done its
    effect (the call returns `result` from now on) or not (`rerun`: it runs again, with
    the same key). A compare-and-set on the stored node: AlreadySettled, naming who
    settled it and when, when it is settled (or finished) already, also by another
    Session or process. Durable at once; takes the session's writer lease for the
    moment unless this session holds it."""
    if by is not None and (not isinstance(by, str) or not by.strip()):
        raise UsageError(f"by={by!r} must name who settles, as text")
    node: Node | None = session.dag.get(node_id)
    operations = tracker(session)
    if node is None and operations.find(node_id) is not None:
        return _settle_operation(session, operations, node_id, result, rerun=rerun, by=by)
    if node is None or node.kind != "code":
        waiting = [n.id for n in session.dag.nodes if n.meta.get("effect") == "once"
                   and n.status in INTERRUPTED]  # fmt: skip
        unknown_ops = [r.id for r in operations.records() if r.state == "unknown"]
        shown = printable(str(node_id), newlines=False)
        shown = shown if len(shown) <= 80 else shown[:80] + "…"
        raise UsageError(
            f"no call {shown!r} in session {session.id}; the calls to settle: {waiting!r}"
            + (f", the operations: {unknown_ops!r}" if unknown_ops else "")
        )
    if node.meta.get("effect") != "once":
        raise UsageError(
            f"{node.name} (node {node_id}) was not declared effect='once': only such a call "
            "waits to be settled (any other interrupted call runs again on resume)"
        )
    theirs = shared(session, node)
    if theirs is not None:
        raise UsageError(str(theirs))
    value = None if rerun else stored_value(node.name, result, session.dag.add_image, returned=True)
    if node.status not in INTERRUPTED or node.meta.get("settled") is not None:
        if _same(node, value, rerun=rerun):
            return node  # settled so already
        raise _already(session, node)
    with session.lease():
        _record(session, node, value, rerun=rerun, by=(by or answerer())[:200])
        session.flush()
    return node


def _settle_operation(
    session: EffectSession,
    operations: Tracker,
    id: str,
    result: object,
    *,
    rerun: bool,
    by: str | None,
) -> Node:
    """settle() of an `unknown` operation: done with `result`, or pending again (`rerun`),
    to run when its tool call is resumed; returns that tool call's node."""
    with session.lease():
        record = operations.settle(id, result=result, rerun=rerun, by=(by or answerer())[:200])
    found: Node = session.dag.node(record.node)
    return found


def _same(node: Node, value: Any, *, rerun: bool) -> bool:
    """Whether `node` is settled as this settle would settle it (settling again: a no-op)."""
    if rerun:
        return node.status == "unknown" and node.meta.get("settled") == RERUN
    return (
        node.status == "completed"
        and node.meta.get("settled") == "result"
        and (node.output == value)
    )


def _record(
    session: EffectSession, node: Node, value: Any, *, rerun: bool, by: str, run: bool = False
) -> None:
    """Settle `node` (the caller holds the writer lease): in the store first, by a
    compare-and-set, then here. AlreadySettled when the store holds it settled already
    (differently; the same settlement is a no-op); SessionLocked instead for a `run`
    (a resumed run's asker settled it) that loaded it before."""
    at = time.time()
    entry = {"how": RERUN if rerun else "result", "by": by, "at": at}
    meta = {
        "settled": RERUN if rerun else "result",
        "settled_at": at,
        "settled_by": by,
        "settlements": [*node.meta.get("settlements", []), entry][-20:],
    }
    if rerun:
        error = node.error if node.status == "unknown" else _UNKNOWN.format(was=node.status)
        change: dict[str, Any] = {"status": "unknown", "output": None, "error": error}
    else:
        change = {"status": "completed", "output": value, "error": None}
    found = _swap(session, node, _settleable, meta=meta, refuse=False, **change)
    if found is not None:
        if _same(found, value, rerun=rerun):
            return
        raise _moved_on(session, node, found) if run else _already(session, found)
    with session.lock:  # and in this process, another thread
        if node.meta.get("settled") is not None or node.status not in INTERRUPTED:
            if _same(node, value, rerun=rerun):
                return
            raise _already(session, node)
        node.meta.update(meta)
        if change["status"] != node.status or not rerun:
            session.dag.complete(node, change["output"], status=change["status"],
                                 error=change["error"])  # fmt: skip
        else:
            session.rewrite(node)


def _swap(
    session: EffectSession,
    node: Node,
    expect: Callable[[NodeRow], bool],
    *,
    meta: dict[str, Any] | None = None,
    refuse: bool = True,
    **change: Any,
) -> Node | None:
    """Record `node` with `change` (and `meta` added) only while the store holds it as
    `expect` accepts: None when recorded (or the session has no store), else the node
    as stored; with `refuse`, SessionLocked saying it changed since it was loaded."""
    recorder = session.recorder
    if recorder is None:
        return None
    if "status" in change and change["status"] != "running":
        change.setdefault("ended_at", time.time())
        change.setdefault("end_seq", session.dag.nodes[-1].seq if len(session.dag) else 0)
    copy = node.model_copy(update={**change, "meta": {**node.meta, **(meta or {})}})
    stored = recorder.compare_and_set(copy, expect)
    if stored is None:
        return None
    found = decode_node(stored, session.id)
    if refuse:
        raise _moved_on(session, node, found)
    return found


def claim_rerun(session: EffectSession, node: Node) -> None:
    """A resumed run is about to run `once` call `node` again (settled so, or failed):
    recorded only while the store holds it as this session loaded it, so two Sessions
    opened on one store never both run it (SessionLocked for the later one)."""
    status, how = node.status, node.meta.get("settled")

    def unchanged(row: NodeRow) -> bool:
        found = decode_node(row)
        return found.status == status and found.meta.get("settled") == how

    meta = {k: v for k, v in node.meta.items() if k != "settled"}
    recorder = session.recorder
    if recorder is None:
        return
    copy = node.model_copy(update={"status": "running", "output": None, "error": None,
                                   "ended_at": None, "end_seq": None, "meta": meta})  # fmt: skip
    stored = recorder.compare_and_set(copy, unchanged)
    if stored is not None:
        raise _moved_on(session, node, decode_node(stored, session.id))


def _when(at: object) -> str:
    if isinstance(at, (int, float)) and math.isfinite(at):
        return time.strftime(" at %Y-%m-%d %H:%M:%S UTC", time.gmtime(at))
    return ""


def _how(node: Node) -> tuple[str, dict[str, Any] | None]:
    """What the record of a settled (or finished) call says: "settled ... by ... at ..."."""
    last = settlement(node)
    if last is None:
        return "", None
    by = last.get("by")
    who = f" by {printable(str(by), newlines=False)[:200]}" if by else ""
    if last.get("how") == RERUN:
        how = "to run again"
    else:
        text = printable(json.dumps(node.output, default=str, ensure_ascii=False))
        how = "with " + (text if len(text) <= 200 else text[:200] + "…")
    return f"it was settled {how}{who}{_when(last.get('at'))}", last


def _already(session: EffectSession, node: Node) -> AlreadySettled:
    """The refusal of settling `node`, as stored: who settled it, when, how, and where it
    stands now."""
    said, last = _how(node)
    now = {"completed": "it finished", "running": "it is running again"}.get(node.status, "")
    if last is not None and last.get("how") == RERUN and node.status == "completed":
        now = "it ran again and finished"
    elif last is not None and node.status != "running":
        now = ""
    reasons = "; ".join(r for r in (said, now) if r) or "a resumed run runs it again"
    return AlreadySettled(
        f"{node.name} (node {node.id}) is {node.status}, not waiting to be settled: "
        f"{reasons}. A call is settled once; nothing changed (reopen the session to see "
        "it as stored)",
        node_id=node.id,
        by=None if last is None else last.get("by"),
        at=None if last is None else last.get("at"),
        how=node.status if last is None else last.get("how"),
    )


def _moved_on(session: EffectSession, node: Node, found: Node) -> SessionLocked:
    said, _ = _how(found)
    state = f"the store holds it {found.status}" + (f": {said}" if said else "")
    where = getattr(session.store, "url", "the store")
    return SessionLocked(
        f"{node.name} (node {node.id}) of session {session.id} changed in {where} after this "
        f"Session loaded it ({state}; by another Session or process), so it is neither run "
        f"nor recorded here. Reopen the session (Session.open(store, {session.id!r}, "
        "resume=True)) to go on from what is stored"
    )


_QUESTION = (
    "{call} (idempotency key {key}) was interrupted, and whether its effect happened is "
    'unknown. Look it up by its key. Answer "rerun" to run it again, or what it returned '
    "(JSON, or text)."
)


def settle_or_raise(session: EffectSession, node: Node) -> None:
    """A resumed run met interrupted `node`: record it `unknown`, then have a person
    settle it when the runtime has an asker (`Runtime(ask=...)`): afterwards it is
    completed, or settled to run again. Raises EffectUnknown when there is nobody to
    ask, RunWaiting when the asker says "not now", SessionLocked when another Session or
    process settled it since this one loaded it."""
    exc = unknown(session, node, stored=True)
    answer = ask_to_settle(_QUESTION.format(call=exc.call, key=exc.key))
    if answer is None:
        raise exc
    rerun, result = answer
    value = None if rerun else stored_value(node.name, result, session.dag.add_image, returned=True)
    _record(session, node, value, rerun=rerun, by=f"{answerer()} (asked by the run)", run=True)
