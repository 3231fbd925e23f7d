"""One batch episode, run in a worker: a gui_agent run recorded as its own session.

Owns `batch_episode` (the session's root call, whose output is the episode's result)
and reading outcomes back from the store, which is how the driver learns what finished
and how a rerun skips it. Scheduling belongs to engines.py.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from gui_harness.agent import gui_agent
from gui_harness.batch.tasks import BatchTask
from gui_harness.result import GuiResult
from openprogram import Runtime, ScriptedModel, Session, agentic_function
from openprogram.errors import UsageError
from openprogram.session.session import current_session

__all__ = ["ORACLE", "Attempt", "attempts", "batch_episode", "run_episode", "session_id"]

ORACLE = "oracle"
"""The model name that plans MiniWoB++ tasks with the DOM-reading oracle (offline)."""
DEMO = "demo"
"""The model name of the scripted demo policy (for the bundled demo form, offline)."""

_ROOT = "batch_episode"


def session_id(batch: str, task_id: str, attempt: int) -> str:
    """The session an attempt of a task is recorded in: stable, so a rerun finds it."""
    return f"{batch}-{task_id}-a{attempt}"


def _runtime(model: str, page: Any = None, provider: dict[str, Any] | None = None) -> Runtime:
    if model == ORACLE:
        if page is None:
            raise UsageError(
                "model 'oracle' reads the goal from a MiniWoB++ page; it cannot plan an "
                "app task. Give that task a real model"
            )
        from gui_harness.bench.oracle import Oracle

        return Runtime(ScriptedModel(Oracle(page)))
    if model == DEMO:
        from gui_harness.demo.policy import demo_policy

        return Runtime(ScriptedModel(demo_policy))
    return Runtime(model, **(provider or {}))


def _provider_kwargs(provider: dict[str, str] | None) -> dict[str, Any]:
    """The Runtime keywords of a batch's provider (api_base, and api_key read from the
    variable api_key_env names, in this worker's environment)."""
    if not provider:
        return {}
    from openprogram.cli import provider_kwargs

    return provider_kwargs(provider.get("api_base"), provider.get("api_key_env"))


@agentic_function(input={"worker": {"hidden": True}, "provider": {"hidden": True}})
def batch_episode(
    task: dict[str, Any],
    model: str,
    worker: dict[str, Any],
    provider: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run one task with gui_agent and return its result; the page judges MiniWoB++, a
    desktop task's evaluator judges it by the apps' output. `provider`: api_base and the
    name of the variable holding the key (api_key_env), never the key."""
    current_session().flush()  # the driver reads `worker` from this call's row to stop it
    options = _provider_kwargs(provider)
    spec = BatchTask.model_validate(task)
    started = time.monotonic()
    result: GuiResult
    reward: float | None = None
    if spec.desktop:
        from gui_harness.bench.desktop import run_desktop_task

        desktop_task = spec.desktop_task()
        outcome = run_desktop_task(
            desktop_task,
            model,
            max_steps=spec.max_steps,
            context_tokens=spec.context_tokens,
            provider=options,
        )
        return {"id": spec.id, "name": spec.name, "instruction": desktop_task.instruction,
                "model": model, **outcome}  # fmt: skip
    with ExitStack() as stack:
        if spec.miniwob is not None:
            from gui_harness.bench.miniwob import MiniWobPage

            page = stack.enter_context(MiniWobPage(spec.miniwob, spec.seed))
            runtime = stack.enter_context(_runtime(model, page, options))
            result = gui_agent(
                page.utterance,
                max_steps=spec.max_steps,
                desktop=page.desktop,
                app="chromium-miniwob",
                runtime=runtime,
                context_tokens=spec.context_tokens,
            )
            reward = page.reward()
            success = reward > 0
            instruction = page.utterance
        else:
            runtime = stack.enter_context(_runtime(model, provider=options))
            result = gui_agent(
                str(spec.task),
                max_steps=spec.max_steps,
                app=spec.app,
                runtime=runtime,
                context_tokens=spec.context_tokens,
            )
            success = result.success
            instruction = str(spec.task)
    usage = result.usage
    return {
        "id": spec.id,
        "name": spec.name,
        "instruction": instruction,
        "model": model,
        "success": success,
        "reward": reward,
        "agent_success": result.success,
        "stop_reason": result.stop_reason,
        "detail": result.detail,
        "steps": len(result.steps),
        "tokens": usage.input_tokens + usage.output_tokens,
        "cost_usd": usage.cost_usd,
        "cost_known": usage.cost_known,
        "seconds": round(time.monotonic() - started, 3),
    }


def run_episode(
    task: BatchTask,
    *,
    store: str,
    session: str,
    model: str,
    provider: dict[str, str] | None = None,
) -> None:
    """Record one attempt of `task` in session `session` of `store` (in a worker).
    `provider`: api_base and api_key_env (the key's variable, read here), as run_batch's.

    What happens is in the store: a completed root call holds the result; an error
    (the episode raised) is recorded on the root call. Nothing is returned.
    """
    worker = {"host": socket.gethostname(), "pid": os.getpid()}
    # an error is recorded on the root call, where the driver reads it
    with Session(store, id=session), contextlib.suppress(Exception):
        batch_episode(task.model_dump(exclude_none=True), model, worker, provider or None)


@dataclass(frozen=True)
class Attempt:
    """One recorded attempt: its session, and its result or what went wrong."""

    session: str
    number: int
    result: dict[str, Any] | None
    error: str | None
    worker: dict[str, Any] | None


def attempts(store: Any, batch: str, task_id: str, sessions: set[str]) -> list[Attempt]:
    """The recorded attempts of a task, in attempt order. `sessions` are the store's
    session ids (listed once per batch). An attempt whose root call never ended (the
    worker died) has neither result nor error."""
    prefix = f"{batch}-{task_id}-a"
    numbers = sorted(
        int(sid[len(prefix) :])
        for sid in sessions
        if sid.startswith(prefix) and sid[len(prefix) :].isdigit()
    )
    found: list[Attempt] = []
    for number in numbers:
        sid = session_id(batch, task_id, number)
        root = next((r for r in store.rows(sid) if r.parent is None and r.name == _ROOT), None)
        worker = None
        result = error = None
        if root is not None:
            inputs = json.loads(root.input) if root.input else {}
            worker = inputs.get("worker") if isinstance(inputs, dict) else None
            if root.status == "completed" and root.output:
                result = json.loads(root.output)
            elif root.status == "error":
                data = json.loads(root.data) if root.data else {}
                error = str(data.get("error") or "the episode raised an error")
        found.append(Attempt(sid, number, result, error, worker))
    return found
