"""BudgetManager: a cost cap per run, checked before every model call and GUI step.

Owns the per-run spend (fed by on_usage, reset by on_run_start) and the gate that stops
the run once the cap is reached. Prices come from `Usage.cost_usd`; calls whose price is
unknown are counted and flagged, never silently treated as free.
"""

from __future__ import annotations

import logging
import threading
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


class BudgetManager(Callback):
    """Stop a run once it has spent `max_cost` US dollars on model calls.

    The gate runs before every model call (`kind="llm"`) and every GUI step
    (`kind="gui_step"`, or any other kind a loop asks about): when the run's spend has
    reached `max_cost` it refuses, and the run stops cleanly with `stop_reason` recorded
    on the run. With `raise_error=True` it raises `BudgetExceeded` instead. Spend is kept
    per run (a top-level call), so concurrent runs sharing a runtime each get the cap.
    Calls whose price litellm does not know count as $0 but are tallied in
    `unpriced_calls` and logged as a warning, since the real spend is then higher.
    """

    def __init__(self, max_cost: float, *, raise_error: bool = False) -> None:
        if not isinstance(max_cost, (int, float)) or isinstance(max_cost, bool) or max_cost < 0:
            raise UsageError(f"max_cost={max_cost!r} must be a number of US dollars >= 0")
        self.max_cost = float(max_cost)
        self.raise_error = raise_error
        self.stop_reason: str | None = None
        self._runs: dict[str | None, _Spend] = {}
        self._latest: _Spend = _Spend()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"BudgetManager(max_cost={self.max_cost!r}, spent={self.spent!r})"

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
    def remaining(self) -> float:
        """US dollars left before the cap (never below 0)."""
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
        with self._lock:
            spend.cost_usd += usage.cost_usd
            spend.calls += usage.calls or 1
            unpriced = usage.unpriced_calls or (0 if usage.cost_known else 1)
            spend.unpriced_calls += unpriced
        if unpriced:
            node.meta["cost_unknown"] = True
            log.warning(
                "BudgetManager: the cost of llm call %s (%s) is unknown to litellm's cost "
                "map and counted as $0; %d such call(s) in this run, so the real spend is "
                "above $%.4f",
                node.id,
                node.meta.get("model", node.name),
                spend.unpriced_calls,
                spend.cost_usd,
            )

    def on_run_continue(
        self, runtime: Any, *, kind: str = "llm", frame: Node | None = None, **context: Any
    ) -> bool:
        """False (or BudgetExceeded) once the run's spend has reached max_cost."""
        run_id = None
        if frame is not None:
            dag = _context.current_session().dag
            run_id = dag.top_level_ancestor(frame).id if frame.id in dag else frame.id
        with self._lock:
            spend = self._runs.get(run_id) or _Spend()
        if spend.cost_usd < self.max_cost:
            return True
        unpriced = (
            f" (plus {spend.unpriced_calls} call(s) of unknown cost)"
            if spend.unpriced_calls
            else ""
        )
        reason = (
            f"budget reached: spent ${spend.cost_usd:.4f} of max_cost=${self.max_cost:.4f} "
            f"over {spend.calls} model call(s){unpriced}; stopped before the next {kind}"
        )
        self.stop_reason = reason
        if self.raise_error:
            raise BudgetExceeded(reason)
        return False
