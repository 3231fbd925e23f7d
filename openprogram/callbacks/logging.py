"""LoggingCallback: one log line per call start and end, model exchange and run end.

Owns the line format only; where lines go is the standard `logging` configuration's
business (handlers, levels). Failed calls are logged at WARNING at least.
"""

from __future__ import annotations

import logging
from typing import Any

from openprogram.callbacks.base import Callback
from openprogram.core import _context
from openprogram.core._secrets import scrub
from openprogram.core.dag import Node
from openprogram.core.usage import Usage, frame_usage
from openprogram.core.values import replace_surrogates
from openprogram.echo import cut, echo

__all__ = ["LoggingCallback"]


class LoggingCallback(Callback):
    """Log calls, model usage, GUI actions and run ends to `logger` at `level`.

    logger: a `logging.Logger` or a logger name; default "openprogram.run".
    Lines look like `call end plan_next_action #3 completed in 1.20s` and
    `llm plan_next_action #3: 1200 in / 80 out tokens (0 cached, 0 reasoning),
    $0.0031, 1.10s`.
    """

    def __init__(self, logger: logging.Logger | str | None = None, level: int = logging.INFO):
        if logger is None or isinstance(logger, str):
            logger = logging.getLogger(logger or "openprogram.run")
        self.logger = logger
        self.level = level

    def __repr__(self) -> str:
        return f"LoggingCallback({self.logger.name!r}, {logging.getLevelName(self.level)})"

    def _log(self, message: str, *args: Any, failed: bool = False) -> None:
        level = max(self.level, logging.WARNING) if failed else self.level
        if self.logger.isEnabledFor(level):  # keys and tokens never reach a log line
            self.logger.log(level, "%s", replace_surrogates(scrub(message % args)))

    def on_call_start(self, node: Node) -> None:
        self._log("call start %s", _label(node))

    def on_call_end(self, node: Node) -> None:
        outcome: str = node.status
        if node.meta.get("stop_reason"):
            outcome = f"stopped ({node.meta['stop_reason']})"
        elif node.error:
            outcome = f"{node.status}: {cut(str(node.error))}"
        failed = node.status == "error" and not node.meta.get("stop_reason")
        self._log("call end %s %s in %s", _label(node), outcome, _seconds(node), failed=failed)

    def on_usage(self, node: Node, usage: Usage) -> None:
        self._log("llm %s: %s", _label(node), _usage_text(usage))

    def on_action_start(self, action: object) -> None:
        self._log("action start %s", _action_text(action))

    def on_action_end(self, action: object, error: object = None) -> None:
        if error is None:
            self._log("action end %s ok", _action_text(action))
        else:
            problem = cut(str(error))
            self._log("action end %s failed: %s", _action_text(action), problem, failed=True)

    def on_run_end(self, run: Node) -> None:
        dag = _context.current_session().dag
        usage = frame_usage(dag, run.id) if run.id in dag else Usage()
        waiting = run.status == "waiting"
        outcome = "stopped" if run.meta.get("stop_reason") and not waiting else run.status
        detail = run.meta.get("stop_reason") or run.error
        self._log(
            "run end %s %s%s in %s: %d llm call(s), %s",
            _label(run),
            outcome,
            f" ({cut(str(detail))})" if detail else "",
            _seconds(run),
            usage.calls,
            _usage_text(usage, latency=False),
            failed=run.status == "error" and not run.meta.get("stop_reason"),
        )


def _label(node: Node) -> str:
    dag = _context.current_session().dag
    try:
        return f"{node.name} #{dag.ordinal(node)}"
    except KeyError:  # a node of another session
        return f"{node.name} [{node.id}]"


def _seconds(node: Node) -> str:
    return "?" if node.duration_s is None else f"{node.duration_s:.2f}s"


def _usage_text(usage: Usage, *, latency: bool = True) -> str:
    cost = f"${usage.cost_usd:.4f}"
    if not usage.cost_known:
        cost += f" (+{usage.unpriced_calls} call(s) of unknown cost)"
    text = (
        f"{usage.input_tokens} in / {usage.output_tokens} out tokens "
        f"({usage.cached_tokens} cached, {usage.reasoning_tokens} reasoning), {cost}"
    )
    return f"{text}, {usage.latency_s:.2f}s" if latency else text


def _action_text(action: Any) -> str:
    if hasattr(action, "model_dump"):
        fields = action.model_dump(exclude_none=True)
    elif isinstance(action, dict):
        fields = {k: v for k, v in action.items() if v is not None}
    else:
        return echo(action)
    kind = fields.pop("type", type(action).__name__)
    arguments = ", ".join(f"{k}={echo(v)}" for k, v in fields.items())
    return f"{kind}({arguments})"
