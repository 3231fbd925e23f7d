"""ReplayModel: a model that answers from a recorded session, for offline tests.

Each new call is matched to its recorded counterpart (same place in the call tree,
concurrent siblings by input) and checked against what the recorded exchange read; a
difference raises ReplayMismatch naming the node. Runs with asyncio.gather or threads
replay strictly: the check rebuilds what the call would read in the recording's
timing. Start at ReplayModel.complete().
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.agentic._resume import Step, all_call_paths, call_path, input_hash, path_text
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.usage import Usage
from openprogram.echo import echo
from openprogram.errors import ModelError, ReplayMismatch, UsageError
from openprogram.models.model import ModelReply, ModelRequest, ToolCall, yield_to_loop
from openprogram.render.render import seen_by

if TYPE_CHECKING:
    from openprogram.session.session import Session

__all__ = ["ReplayModel"]


class ReplayModel:
    """Answers every llm() call with the reply recorded at the same place in `session`.

    A call matches the recorded exchange at its place in the call tree (e.g. `gui_agent
    #1 / gui_step #3 / llm plan_next_action #1`; concurrent calls of one function that
    start in another order than recorded are told apart by their input). With
    strict=True (the default) the model must see what it saw then: the rendered
    messages hash equal, or — when concurrent calls ran in another order — the call's
    context rebuilt in the recording's timing from this run's nodes does. With
    strict=False only the llm() content must be the same. Recorded tool calls are asked
    again (the tools themselves run live).

    patience: seconds a call waits, while the run makes no progress, for concurrent work
        the recording shows finished before it (another thread's call, say) before the
        difference counts as a mismatch.
    The recording is read once, when the model is made. Raises ReplayMismatch (with the
    new node's id) when the place is not recorded or what the call reads differs; a
    recorded provider failure is raised again as ModelError. Replies cost nothing.
    """

    def __init__(
        self, session: Session | ContextDAG, *, strict: bool = True, patience: float = 5.0
    ) -> None:
        if patience < 0:
            raise UsageError(f"patience={patience!r} must be >= 0 (seconds)")
        dag = session if isinstance(session, ContextDAG) else session.dag
        self.name = f"replay:{getattr(session, 'id', 'dag')}"
        self.strict = strict
        self.patience = patience
        self.recorded: dict[tuple[Step, ...], Node] = {
            path: node for path, node in all_call_paths(dag).items() if node.kind == "llm"
        }
        self._dag = dag
        self._on_branch = _on_branch(dag)
        self._lock = threading.Lock()
        self._runs: weakref.WeakKeyDictionary[ContextDAG, _Run] = weakref.WeakKeyDictionary()

    def complete(self, request: ModelRequest) -> ModelReply:
        run, node, recorded = self._match(request)
        while True:
            version = run.version
            problem = self._problem(run, node, recorded, request)
            if problem is None:
                return _reply(recorded, node, run.dag)
            if not problem.pending or not _others_at_work(run.dag, node):
                raise problem.error
            if not run.wait(version, self.patience):
                raise problem.error

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        run, node, recorded = self._match(request)
        while True:
            version = run.version
            problem = self._problem(run, node, recorded, request)
            if problem is None:
                break
            others = _others_at_work(run.dag, node) or len(asyncio.all_tasks()) > 1
            if not problem.pending or not others:
                raise problem.error
            if not await run.await_change(version, self.patience):
                raise problem.error
        await yield_to_loop(request)
        return _reply(recorded, node, run.dag)

    def __repr__(self) -> str:
        return f"ReplayModel({self.name!r}, exchanges={len(self.recorded)})"

    def tool_result(self, dag: ContextDAG, node: Node) -> Node | None:
        """The recorded node answering the same tool call as `node` (a running tool call
        of this replay, `meta["asked_by"]` and `meta["tool_call_id"]`), or None. For
        tools that must not run again under replay (an MCP server's)."""
        asked_by = dag.get(node.meta.get("asked_by"))
        run = self._runs.get(dag)
        recorded = run.counterpart(asked_by) if run is not None and asked_by else None
        if recorded is None:
            return None
        call_id = node.meta.get("tool_call_id")
        for answer in self._dag.children(recorded.parent):
            if (
                answer.meta.get("asked_by") == recorded.id
                and answer.meta.get("tool_call_id") == call_id
            ):
                return answer
        return None

    def recorded_answer(self, dag: ContextDAG, node: Node) -> tuple[bool, Any]:
        """(True, the answer) the recording holds for the ask_user call `node` of this
        replay, else (False, None): a replay answers its questions as they were. An
        answer stands only for the question it answered: ReplayMismatch when the
        recorded question, or the call that asked it (an approved tool's arguments),
        had another input (an approval of `pay(10)` never pays `pay(10_000)`)."""
        with self._lock:
            run = self._runs.get(dag)
            if run is None:
                run = self._runs[dag] = _Run(dag, self._dag, self._on_branch, self.patience)
        recorded = run.counterpart(node)
        if recorded is None or recorded.status != "completed" or recorded.name != node.name:
            return False, None
        asker, recorded_asker = dag.get(node.parent), self._dag.get(recorded.parent)
        for what, new, old in (
            ("question", node, recorded),
            ("call asking it", asker, recorded_asker),
        ):
            if _input_of(new) != _input_of(old):
                where = path_text(call_path(dag, node))
                raise ReplayMismatch(
                    f"the recorded answer at {where} (new node {node.id}) was given to "
                    f"another {what}: the recording has {echo(getattr(old, 'input', None))}, "
                    f"this run {echo(getattr(new, 'input', None))}. An answer stands only "
                    "for the question it answered; re-record the session.",
                    node_id=node.id,
                )
        return True, recorded.output

    # -- matching ------------------------------------------------------------------------
    def _match(self, request: ModelRequest) -> tuple[_Run, Node, Node]:
        dag = request.rendered.dag
        with self._lock:
            run = self._runs.get(dag)
            if run is None:
                run = self._runs[dag] = _Run(dag, self._dag, self._on_branch, self.patience)
        node = dag.node(request.node_id)
        recorded = run.counterpart(node)
        if recorded is None:
            path = call_path(dag, node)
            raise ReplayMismatch(
                f"the recording has no llm exchange at {path_text(path)} (new node "
                f"{node.id}); it holds {len(self.recorded)} exchanges"
                + (f", the nearest {_nearest(self.recorded, path)}" if self.recorded else "")
                + ". Re-record the session, or check why the program asks here.",
                node_id=node.id,
            )
        return run, node, recorded

    def _problem(
        self, run: _Run, node: Node, recorded: Node, request: ModelRequest
    ) -> _Problem | None:
        """None when the call may have the recorded reply; else what is wrong."""
        where = path_text(call_path(run.dag, node))
        if not self.strict:
            if input_hash(recorded.input) == input_hash(node.input):
                return None
            return _Problem(_mismatch("llm() content", where, node, recorded, ""))
        if request.rendered.messages_hash == recorded.messages_hash:
            return None
        return run.as_recorded(node, recorded, request, where)


@dataclass
class _Problem:
    error: ReplayMismatch
    pending: bool = False  # a concurrent call may yet catch up with the recording


class _Run:
    """One replayed run (a live DAG): which recorded node each new node stands for, and
    a way to wait until the run has moved on."""

    def __init__(
        self, dag: ContextDAG, recording: ContextDAG, on_branch: set[str], patience: float
    ) -> None:
        self.dag = dag
        self.patience = patience
        self.recording = recording
        self.on_branch = on_branch
        self.version = 0
        self._changed = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []
        self._seen = 0
        self._map: dict[str, Node] = {}
        self._claimed: set[str] = set()
        self._counts: dict[tuple[str | None, str, str], int] = {}
        dag.listeners.append(self._on_change)

    def _on_change(self, event: str, node: Node) -> None:
        with self._changed:
            self.version += 1
            self._changed.notify_all()
            waiters = list(self._waiters)
        for loop, flag in waiters:
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there
                loop.call_soon_threadsafe(flag.set)

    def wait(self, version: int, patience: float) -> bool:
        """Block until the run changes after `version`; False after `patience` s idle."""
        with self._changed:
            return self._changed.wait_for(lambda: self.version != version, timeout=patience)

    async def await_change(self, version: int, patience: float) -> bool:
        flag = asyncio.Event()
        entry = (asyncio.get_running_loop(), flag)
        with self._changed:
            if self.version != version:
                return True
            self._waiters.append(entry)
        try:
            await asyncio.wait_for(flag.wait(), timeout=patience)
        except TimeoutError:
            return False
        finally:
            with self._changed:
                self._waiters.remove(entry)
        return True

    # -- new node → recorded node ---------------------------------------------------------
    def counterpart(self, node: Node) -> Node | None:
        with self._changed:
            self._catch_up()
            return self._map.get(node.id)

    def _catch_up(self) -> None:
        """Match the nodes created since the last call, in seq order (parents first)."""
        nodes = self.dag.nodes
        for node in nodes[self._seen :]:
            found = self._find(node)
            if found is not None:
                self._claimed.add(found.id)
                self._map[node.id] = found
        self._seen = len(nodes)

    def _find(self, node: Node) -> Node | None:
        """The recorded node at the same place: the k-th of its name there when its input
        matches, else any unclaimed one there whose input does (concurrent calls that
        started in another order), else the k-th (a real difference, reported later)."""
        if node.parent is None:
            if not self.dag.on_branch(node, self.dag.branch, sys.maxsize):
                return None
            siblings = [n for n in self.recording.children(None) if n.id in self.on_branch]
        else:
            parent = self._map.get(node.parent)
            if parent is None:
                return None
            siblings = self.recording.children(parent.id)
        key = (node.parent, node.kind, node.name)
        k = self._counts[key] = self._counts.get(key, 0) + 1
        candidates = [n for n in siblings if n.kind == node.kind and n.name == node.name]
        preferred = candidates[k - 1] if k <= len(candidates) else None
        digest = _hash(node)
        if preferred is not None and preferred.id in self._claimed:
            preferred = None
        if preferred is not None and _hash(preferred) == digest:
            return preferred
        for candidate in candidates:
            if candidate.id not in self._claimed and _hash(candidate) == digest:
                return candidate
        return preferred

    # -- the strict check in the recording's timing ---------------------------------------
    def as_recorded(
        self, node: Node, recorded: Node, request: ModelRequest, where: str
    ) -> _Problem | None:
        """Rebuild what `node` would read had the run been timed as the recording: the
        recorded nodes before `recorded`, each with this run's content, finished exactly
        when they had finished then. None when that equals what `recorded` read."""
        with self._changed:
            self._catch_up()
            live_of = {rec.id: self.dag.node(live_id) for live_id, rec in self._map.items()}
            unknown = [i for i in request.rendered.reads if i not in self._map]
        if unknown:
            extra = self.dag.node(unknown[0])
            detail = f"; this run shows {_describe(self.dag, extra)}, which the recording lacks"
            return _Problem(_mismatch("rendered messages", where, node, recorded, detail))
        view = ContextDAG()
        view.branch = self.recording.branch
        view.adopt_branches(self.recording.branch_origins)
        view.blobs = self.dag.blobs
        for old in self.recording.nodes:
            if old.seq >= recorded.seq:
                break
            if old.id not in self.on_branch:
                continue
            live = live_of.get(old.id)
            finished = old.end_seq is not None and old.end_seq < recorded.seq
            if live is None or (finished and live.status == "running"):
                what = "has not started" if live is None else "has not finished"
                return _Problem(
                    ReplayMismatch(
                        f"the call at {where} (new node {node.id}) cannot be checked against "
                        f"the recorded exchange {recorded.id}: "
                        f"{_describe(self.recording, old)}, which the recording shows "
                        f"before it, {what} in this run, and the run made no progress "
                        f"within patience={self.patience}s. Check that the part of the "
                        "program doing it still runs (a sync llm() inside an event loop "
                        "stops every other task), or re-record.",
                        node_id=node.id,
                    ),
                    pending=True,
                )
            view.restore(_in_recorded_timing(old, live, finished))
        meta = node.meta
        if "tool_loop" in meta:  # a tool loop's earlier turns, by their recorded ids
            mapped = {live_id: rec.id for live_id, rec in self._map.items()}
            meta = {**meta, "tool_loop": [mapped.get(i, i) for i in meta["tool_loop"]]}
        again = node.model_copy(
            update={
                "meta": meta,
                "id": recorded.id,
                "seq": recorded.seq,
                "parent": recorded.parent,
                "predecessor": recorded.predecessor,
                "branch": recorded.branch,
                "end_seq": None,
                "status": "running",
            }
        )
        view.restore(again)
        rebuilt = seen_by(view, again)
        if rebuilt.messages_hash == recorded.messages_hash:
            return None
        detail = _first_difference(seen_by(self.recording, recorded).text(), rebuilt.text())
        return _Problem(_mismatch("rendered messages", where, node, recorded, detail))


def _in_recorded_timing(old: Node, live: Node, finished: bool) -> Node:
    """`live`'s content at `old`'s place and time: running unless it had finished then."""
    update: dict[str, Any] = {
        "input": live.input,
        "expose": live.expose,
        "render_range": live.render_range,
        "hidden_inputs": live.hidden_inputs,
        "system": live.system,
    }
    if finished:
        update.update(output=live.output, status=live.status, error=live.error)
        if "render_output" in live.meta:
            update["meta"] = {**old.meta, "render_output": live.meta["render_output"]}
    return old.model_copy(update=update)


def _others_at_work(dag: ContextDAG, node: Node) -> bool:
    """Whether anything besides `node`'s own call stack could still change the run."""
    stack = {node.id, *(n.id for n in dag.ancestors(node))}
    if threading.active_count() > 1:
        return True
    return any(n.status == "running" and n.id not in stack for n in dag.nodes)


def _hash(node: Node) -> str:
    return input_hash(node.input, node.hidden_inputs if node.kind == "code" else ())


def _on_branch(dag: ContextDAG) -> set[str]:
    """Ids of the recorded nodes on the recording's current branch."""
    ids = {node.id for node in all_call_paths(dag).values()}
    for top in dag.children(None):
        if top.kind == "user" and dag.on_branch(top, dag.branch, sys.maxsize):
            ids.add(top.id)
    return ids


def _describe(dag: ContextDAG, node: Node) -> str:
    return f"{path_text(call_path(dag, node))} (node {node.id})"


def _first_difference(recorded: str, now: str) -> str:
    for old, new in zip(recorded.splitlines(), now.splitlines(), strict=False):
        if old != new:
            return f"; first difference: recorded {echo(old, 160)}, now {echo(new, 160)}"
    return ""


def _input_of(node: Node | None) -> str | None:
    return None if node is None else input_hash(node.input, node.hidden_inputs)


def _mismatch(what: str, where: str, node: Node, recorded: Node, detail: str) -> ReplayMismatch:
    return ReplayMismatch(
        f"the {what} at {where} (new node {node.id}) differ from the recorded exchange "
        f"{recorded.id}{detail}. The program now sends something else at this point; "
        "re-record, or use ReplayModel(session, strict=False) to match on the llm() "
        "content only.",
        node_id=node.id,
    )


def _reply(recorded: Node, node: Node, dag: ContextDAG) -> ModelReply:
    if recorded.output is None:
        raise ModelError(
            f"the recorded exchange {recorded.id} at {path_text(call_path(dag, node))} "
            f"failed: {recorded.error or recorded.status}",
            node_id=node.id,
        )
    usage = recorded.usage or Usage()
    return ModelReply(
        text=str(recorded.output),
        usage=Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cached_tokens=usage.cached_tokens,
            reasoning_tokens=usage.reasoning_tokens,
            calls=1,
        ),
        raw={"replayed_from": recorded.id},
        tool_calls=[ToolCall.from_json(c) for c in recorded.meta.get("tool_calls") or ()] or None,
    )


def _nearest(recorded: dict[tuple[Step, ...], Any], path: tuple[Step, ...]) -> str:
    """The recorded path sharing the longest prefix with `path`, as text."""

    def shared(candidate: tuple[Step, ...]) -> int:
        count = 0
        for mine, theirs in zip(path, candidate, strict=False):
            if mine != theirs:
                break
            count += 1
        return count

    best = max(recorded, key=shared)
    return f"is {path_text(best)}"
