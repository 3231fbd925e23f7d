"""BudgetManager: per-run limits on cost, tokens, model requests and tool calls.

Owns the per-run tally (fed by on_usage, reset by on_run_start) and the gate that stops
the run once a limit is reached, checked before every model call, every round of tool
calls and every GUI step. Prices come from `Usage.cost_usd`; calls whose price is
unknown are counted and flagged, never silently treated as free.
"""

from __future__ import annotations

import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Any

from openprogram import _context
from openprogram.callbacks.base import Callback, current_run
from openprogram.dag import Node
from openprogram.errors import BudgetExceeded, UsageError
from openprogram.usage import Usage

__all__ = ["BudgetManager"]

log = logging.getLogger("openprogram.callbacks")


@dataclass
class _Spend:
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0


class BudgetManager(Callback):
    """Stop a run once it reaches any of its limits.

    max_cost: US dollars spent on model calls. max_tokens: tokens (input plus output)
    of its model calls. max_requests: model calls. max_tool_calls: tool calls the model
    asked for (checked before a round of them runs, so none over the limit runs).
    The gate runs before every model call (`kind="llm"`), every round of tool calls
    (`kind="tool_calls"`) and every GUI step (`kind="gui_step"`, or any other kind a
    loop asks about): once a limit is reached it refuses, and the run stops cleanly with
    `stop_reason` (naming the limit and the count reached) recorded on the run. With
    `raise_error=True` it raises `BudgetExceeded` instead. Tallies are kept per run (a
    top-level call), so concurrent runs sharing a runtime each get the limits.
    Calls whose price litellm does not know count as $0 and are tallied in
    `unpriced_calls`; with `max_cost` set, the first such call warns (once per manager)
    that the cost limit cannot be enforced for that model.
    """

    def __init__(
        self,
        max_cost: float | None = None,
        *,
        max_tokens: int | None = None,
        max_requests: int | None = None,
        max_tool_calls: int | None = None,
        raise_error: bool = False,
    ) -> None:
        if max_cost is not None and (
            not isinstance(max_cost, (int, float)) or isinstance(max_cost, bool) or max_cost < 0
        ):
            raise UsageError(f"max_cost={max_cost!r} must be a number of US dollars >= 0")
        for name, value in (
            ("max_tokens", max_tokens),
            ("max_requests", max_requests),
            ("max_tool_calls", max_tool_calls),
        ):
            if value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0
            ):
                raise UsageError(f"{name}={value!r} must be an int >= 0, or None for no limit")
        self.max_cost = None if max_cost is None else float(max_cost)
        self.max_tokens = max_tokens
        self.max_requests = max_requests
        self.max_tool_calls = max_tool_calls
        self.raise_error = raise_error
        self.stop_reason: str | None = None
        self._runs: dict[str | None, _Spend] = {}
        self._latest: _Spend = _Spend()
        self._lock = threading.Lock()
        self._warned_unpriced = False

    def __repr__(self) -> str:
        limits = ", ".join(
            f"{name}={value!r}"
            for name, value in (
                ("max_cost", self.max_cost),
                ("max_tokens", self.max_tokens),
                ("max_requests", self.max_requests),
                ("max_tool_calls", self.max_tool_calls),
            )
            if value is not None
        )
        return f"BudgetManager({limits or 'no limits'}, spent={self.spent!r})"

    # -- what has been spent -------------------------------------------------------------
    @property
    def spent(self) -> float:
        """US dollars spent by the current run (or the most recent one)."""
        return self._current().cost_usd

    @property
    def calls(self) -> int:
        """Model calls counted in the current run (or the most recent one)."""
        return self._current().calls

    @property
    def unpriced_calls(self) -> int:
        """Calls of the current run whose cost was unknown and counted as $0."""
        return self._current().unpriced_calls

    @property
    def tokens(self) -> int:
        """Tokens (input plus output) of the current run's model calls (or the most recent
        run's)."""
        return self._current().tokens

    @property
    def tool_calls(self) -> int:
        """Tool calls the model asked for in the current run (or the most recent one)."""
        return self._current().tool_calls

    @property
    def remaining(self) -> float | None:
        """US dollars left before max_cost (never below 0); None without a cost limit."""
        if self.max_cost is None:
            return None
        return max(0.0, self.max_cost - self.spent)

    def _current(self) -> _Spend:
        run = current_run()
        with self._lock:
            return self._runs.get(run.id if run else None) or self._latest

    def _spend(self, run_id: str | None) -> _Spend:
        with self._lock:
            spend = self._runs.get(run_id)
            if spend is None:
                spend = self._runs[run_id] = _Spend()
            self._latest = spend
            return spend

    # -- hooks ---------------------------------------------------------------------------
    def on_run_start(self, run: Node) -> None:
        with self._lock:
            self._runs[run.id] = self._latest = _Spend()
            self.stop_reason = None

    def on_run_end(self, run: Node) -> None:
        with self._lock:
            self._runs.pop(run.id, None)

    def on_usage(self, node: Node, usage: Usage) -> None:
        dag = _context.current_session().dag
        run_id = dag.top_level_ancestor(node).id if node.id in dag else None
        spend = self._spend(run_id if run_id != node.id else None)
        unpriced = usage.unpriced_calls or (0 if usage.cost_known else 1)
        with self._lock:
            spend.cost_usd += usage.cost_usd
            spend.calls += usage.calls or 1
            spend.tokens += usage.input_tokens + usage.output_tokens
            spend.tool_calls += len(node.meta.get("tool_calls") or ())
            spend.unpriced_calls += unpriced
            warn = bool(unpriced) and self.max_cost is not None and not self._warned_unpriced
            self._warned_unpriced = self._warned_unpriced or warn
        if not unpriced:
            return
        node.meta["cost_unknown"] = True
        model = node.meta.get("model", node.name)
        if warn:
            warnings.warn(
                f"BudgetManager(max_cost=${self.max_cost:.4f}) cannot be enforced for "
                f"{model!r}: litellm's cost map has no price for it, so its calls count as "
                "$0. Limit the run with max_tokens= or max_requests= instead, or register "
                "the price with litellm.register_model(...)",
                UserWarning,
                stacklevel=2,
            )
        log.info(
            "BudgetManager: the cost of llm call %s (%s) is unknown and counted as $0; "
            "%d such call(s) in this run",
            node.id,
            model,
            spend.unpriced_calls,
        )

    def on_run_continue(
        self, runtime: Any, *, kind: str = "llm", frame: Node | None = None, **context: Any
    ) -> bool:
        """False (or BudgetExceeded) once the run has reached one of the limits."""
        run_id = None
        if frame is not None:
            dag = _context.current_session().dag
            run_id = dag.top_level_ancestor(frame).id if frame.id in dag else frame.id
        with self._lock:
            spend = self._runs.get(run_id) or _Spend()
        reason = self._reached(spend, kind)
        if reason is None:
            return True
        self.stop_reason = reason
        if self.raise_error:
            raise BudgetExceeded(reason)
        return False

    def _reached(self, spend: _Spend, kind: str) -> str | None:
        """The stop message of the first limit reached (None: go on), naming the limit
        and the count."""
        before = f"stopped before the next {kind}"
        calls = f"{spend.calls} model call(s)"
        if kind == "tool_calls":
            if self.max_tool_calls is not None and spend.tool_calls > self.max_tool_calls:
                return (
                    f"budget reached: max_tool_calls={self.max_tool_calls}; the model asked "
                    f"for {spend.tool_calls} tool call(s) in this run; stopped before running "
                    "the last round"
                )
            return None
        if self.max_cost is not None and spend.cost_usd >= self.max_cost:
            if self.max_cost == 0:
                return f"budget reached: max_cost=$0 allows no model call; {before}"
            unpriced = (
                f" (plus {spend.unpriced_calls} call(s) of unknown cost)"
                if spend.unpriced_calls
                else ""
            )
            return (
                f"budget reached: max_cost=${self.max_cost:.4f}; spent ${spend.cost_usd:.4f} "
                f"over {calls}{unpriced}; {before}"
            )
        if self.max_tokens is not None and spend.tokens >= self.max_tokens:
            return (
                f"budget reached: max_tokens={self.max_tokens}; used {spend.tokens} tokens "
                f"over {calls}; {before}"
            )
        if self.max_requests is not None and spend.calls >= self.max_requests:
            return f"budget reached: max_requests={self.max_requests}; made {calls}; {before}"
        if self.max_tool_calls is not None and spend.tool_calls > self.max_tool_calls:
            return (
                f"budget reached: max_tool_calls={self.max_tool_calls}; the model asked for "
                f"{spend.tool_calls} tool call(s); {before}"
            )
        return None
