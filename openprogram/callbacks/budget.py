"""BudgetManager: limits on cost, tokens, model requests and tool calls, per run and shared.

Owns the per-run tally (fed by on_usage; started by on_run_start from what a resumed
run already spent), the reservations of requests on their way (held by the gate, given
back by on_settle) and the gate that stops the run once a limit is reached, checked
before every model call, every round of tool calls and every GUI step. Prices come from
`Usage.cost_usd`; calls whose price is unknown are counted and flagged, never free.
Limits shared across runs and processes are budget_shared.py's SharedBudget, asked here.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from openprogram.callbacks.base import Callback, current_run, scope
from openprogram.callbacks.budget_shared import SharedBudget, check_limits
from openprogram.core import _context
from openprogram.core.dag import Node
from openprogram.core.usage import Usage
from openprogram.errors import BudgetExceeded, UsageError

__all__ = ["BudgetManager"]

log = logging.getLogger("openprogram.callbacks")

_reserving: contextvars.ContextVar[object] = contextvars.ContextVar("_reserving", default=None)
"""The reservation of the request this context (a thread, a task, a stream) last let
through: on_usage settles that request's shared counts in the periods it was counted in
(the exchange is answered in the context it was asked in, a stream in a copy of it)."""


@dataclass
class _Spend:
    cost_usd: float = 0.0
    calls: int = 0
    unpriced_calls: int = 0
    tokens: int = 0
    tool_calls: int = 0
    held: dict[object, tuple[int, float]] = field(default_factory=dict)
    """Requests let through and not yet settled: the (tokens, cost) each counts as."""

    def add(self, usage: Usage, tool_calls: int) -> int:
        """Add one exchange; its unpriced calls."""
        unpriced = usage.unpriced_calls or (0 if usage.cost_known else 1)
        self.cost_usd += usage.cost_usd
        self.calls += usage.calls or 1
        self.tokens += usage.input_tokens + usage.output_tokens
        self.tool_calls += tool_calls
        self.unpriced_calls += unpriced
        return unpriced

    def hold(self, reservation: object, tokens: int) -> None:
        """Count a request on its way as the run's average call so far, or as its
        prompt's `tokens` (estimated) when that is more."""
        calls = max(self.calls, 1)
        average = self.tokens // calls
        cost = self.cost_usd / calls
        if tokens > average and average:  # a bigger prompt than usual costs more
            cost *= tokens / average
        self.held[reservation] = (max(average, tokens), cost)


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
    top-level call), so concurrent runs sharing a runtime each get the limits; a resumed
    run's tally starts from what its recorded model calls used. A request the gate lets
    through is held (counted) until it is settled, so concurrent calls of one run never
    pass max_requests together, and count against max_tokens and max_cost at the run's
    average call so far; a stream read partly is tallied when it is closed or collected.
    Calls whose price litellm does not know count as $0 and are tallied in
    `unpriced_calls`; with a cost limit set (its own or a shared one's), the first such
    call, or the first call of a model that reports no cost at all (a ScriptedModel, a
    free local model), warns (once per manager) that the limit cannot be enforced.
    shared: a SharedBudget, or several, whose limits hold across runs and processes
    (a conversation's, a day's, a tenant's): asked before every model call after this
    run's own limits, each request counted against them atomically in their store, and
    each answered call's cost, tokens and tool calls added to the period its request was
    counted in (a call answered after midnight settles in its day); a shared limit
    reached stops the run the same way, its stop_reason naming the shared budget.
    """

    def __init__(
        self,
        max_cost: float | None = None,
        *,
        max_tokens: int | None = None,
        max_requests: int | None = None,
        max_tool_calls: int | None = None,
        shared: SharedBudget | Sequence[SharedBudget] = (),
        raise_error: bool = False,
    ) -> None:
        check_limits(max_cost, max_tokens, max_requests, max_tool_calls)
        budgets = [shared] if isinstance(shared, SharedBudget) else list(shared)
        for budget in budgets:
            if not isinstance(budget, SharedBudget):
                raise UsageError(
                    f"shared={shared!r} must be a SharedBudget or a list of them, "
                    "e.g. shared=SharedBudget('tenant-42', max_cost=5.0, period='day')"
                )
        self.shared: tuple[SharedBudget, ...] = tuple(budgets)
        self.max_cost = None if max_cost is None else float(max_cost)
        self.max_tokens = max_tokens
        self.max_requests = max_requests
        self.max_tool_calls = max_tool_calls
        self.raise_error = raise_error
        self.stop_reason: str | None = None
        self._runs: dict[str | None, _Spend] = {}
        self._held: dict[object, _Spend] = {}  # reservation -> the tally holding it
        self._spans: dict[object, tuple[str, ...]] = {}  # reservation -> its shared periods
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
        if self.shared:
            limits += (", " if limits else "") + f"shared={list(self.shared)!r}"
        return f"BudgetManager({limits or 'no limits'}, spent={self.spent!r})"

    def scope(self) -> AbstractContextManager[None]:
        """Hold this budget's limits over the calls made inside the block, besides the
        runtime's own callbacks (whose budgets count the same calls): a sub-agent's
        budget. Each `asyncio.gather`ed task entered in its own scope gets its own;
        requests on their way are held, so concurrent calls never pass a limit together.

            async def one(i):
                with BudgetManager(max_requests=3).scope():
                    return await research(i)
        """
        return scope(self)

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
        spend = _recorded(_context.current_session().dag, run)
        with self._lock:
            self._runs[run.id] = self._latest = spend
            self.stop_reason = None

    def on_run_end(self, run: Node) -> None:
        with self._lock:
            self._runs.pop(run.id, None)

    def on_usage(self, node: Node, usage: Usage) -> None:
        dag = _context.current_session().dag
        run_id = dag.top_level_ancestor(node).id if node.id in dag else None
        spend = self._spend(run_id if run_id != node.id else None)
        tool_calls = len(node.meta.get("tool_calls") or ())
        with self._lock:
            unpriced = spend.add(usage, tool_calls)
        tokens = usage.input_tokens + usage.output_tokens
        with self._lock:
            spans = self._spans.get(_reserving.get())
        for i, budget in enumerate(self.shared):
            span = spans[i] if spans is not None else budget.span()
            budget.spend(usage.cost_usd, tokens, tool_calls, unpriced, span)
        # a model that reports no cost at all has no price either (a ScriptedModel)
        free = not unpriced and usage.cost_usd == 0 and tokens > 0
        model = node.meta.get("model", node.name)
        if unpriced or free:
            self._warn_unenforceable(model, unpriced=bool(unpriced))
        if not unpriced:
            return
        node.meta["cost_unknown"] = True
        log.info(
            "BudgetManager: the cost of llm call %s (%s) is unknown and counted as $0; "
            "%d such call(s) in this run",
            node.id,
            model,
            spend.unpriced_calls,
        )

    def _warn_unenforceable(self, model: str, *, unpriced: bool) -> None:
        """Warn, once per manager, that a cost limit cannot stop calls of `model`."""
        limits = [f"max_cost=${self.max_cost:.4f}"] if self.max_cost is not None else []
        limits += [
            f"SharedBudget({b.name!r}, max_cost=${b.max_cost:.4f})"
            for b in self.shared
            if b.max_cost is not None
        ]
        with self._lock:
            if not limits or self._warned_unpriced:
                return
            self._warned_unpriced = True
        why = (
            "litellm's cost map has no price for it, so its calls count as $0"
            if unpriced
            else "its calls report a cost of $0 (a model with no price, such as a "
            "ScriptedModel or a local server)"
        )
        warnings.warn(
            f"BudgetManager({', '.join(limits)}) cannot be enforced for {model!r}: {why}. "
            "Limit the run with max_tokens= or max_requests= instead"
            + (", or register the price with litellm.register_model(...)" if unpriced else ""),
            UserWarning,
            stacklevel=3,
        )

    def on_settle(self, reservation: object) -> None:
        """The request held under `reservation` was answered (its usage reported), failed
        or never sent: it no longer counts as on its way."""
        with self._lock:
            self._spans.pop(reservation, None)
            spend = self._held.pop(reservation, None)
            if spend is not None:
                spend.held.pop(reservation, None)

    def on_reserve(
        self, reservation: object, *, frame: Node | None = None, tokens: int = 0
    ) -> bool:
        """Before a model request is sent (after every gate let it through): hold
        `reservation` for it until `on_settle(reservation)`, counted as the run's average
        call or as its prompt's estimated `tokens` when that is more, so concurrent calls
        count it (False, or BudgetExceeded, when the run's limits, counting what it holds
        already, are reached). The check and the hold are one step: threads cannot both
        pass."""
        return self._check("llm", frame, reservation, tokens)

    def on_run_continue(
        self, runtime: object, *, kind: str = "llm", frame: Node | None = None, **context: Any
    ) -> bool:
        """False (or BudgetExceeded) once the run has reached one of the limits, counting
        the requests it holds, or a shared budget has."""
        return self._check(kind, frame, None)

    def _check(self, kind: str, frame: Node | None, reservation: object, tokens: int = 0) -> bool:
        run_id = None
        if frame is not None:
            dag = _context.current_session().dag
            run_id = dag.top_level_ancestor(frame).id if frame.id in dag else frame.id
        with self._lock:
            spend = self._runs.get(run_id)
            if spend is None:
                spend = _Spend()
                if reservation is not None:
                    self._runs[run_id] = spend
            reason = self._reached(spend, kind)
            if reason is None and reservation is not None:
                spend.hold(reservation, tokens)
                self._held[reservation] = spend
        if reason is None:
            reason = self._shared(kind, reservation)
        if reason is None:
            return True
        self.stop_reason = reason
        if self.raise_error:
            raise BudgetExceeded(reason)
        return False

    def _shared(self, kind: str, reservation: object) -> str | None:
        """The stop message of the first shared budget reached (None: go on). With a
        `reservation` (a request about to be sent) each counts it, atomically, in its
        current period, which its answer is settled in too; when one refuses, the
        request is not sent: this run's hold and the counts the others took are given
        back."""
        if reservation is None:
            for budget in self.shared:
                reason = budget.reached(kind)
                if reason is not None:
                    return reason
            return None
        spans = tuple(budget.span() for budget in self.shared)
        for i, budget in enumerate(self.shared):
            reason = budget.charge(spans[i])
            if reason is not None:
                self.on_settle(reservation)
                for other, span in zip(self.shared[:i], spans, strict=False):
                    other.refund(span)
                return reason
        if self.shared:
            with self._lock:
                self._spans[reservation] = spans
            _reserving.set(reservation)
        return None

    def _reached(self, spend: _Spend, kind: str) -> str | None:
        """The stop message of the first limit reached (None: go on), naming the limit
        and the count."""
        before = f"stopped before the next {kind}"
        held = spend.held.values()
        count = spend.calls + len(held)
        calls = f"{count} model call(s)"
        if held:
            calls += f" ({len(held)} not yet answered, each counted at its estimate)"
        tokens = spend.tokens + sum(t for t, _ in held)
        cost = spend.cost_usd + sum(c for _, c in held)
        if kind == "tool_calls":
            if self.max_tool_calls is not None and spend.tool_calls > self.max_tool_calls:
                return (
                    f"budget reached: max_tool_calls={self.max_tool_calls}; the model asked "
                    f"for {spend.tool_calls} tool call(s) in this run; stopped before running "
                    "the last round"
                )
            return None
        if self.max_cost is not None and cost >= self.max_cost:
            if self.max_cost == 0:
                return f"budget reached: max_cost=$0 allows no model call; {before}"
            unpriced = (
                f" (plus {spend.unpriced_calls} call(s) of unknown cost)"
                if spend.unpriced_calls
                else ""
            )
            return (
                f"budget reached: max_cost=${self.max_cost:.4f}; spent ${cost:.4f} "
                f"over {calls}{unpriced}; {before}"
            )
        if self.max_tokens is not None and tokens >= self.max_tokens:
            return (
                f"budget reached: max_tokens={self.max_tokens}; used {tokens} tokens "
                f"over {calls}; {before}"
            )
        if self.max_requests is not None and count >= self.max_requests:
            return f"budget reached: max_requests={self.max_requests}; made {calls}; {before}"
        if self.max_tool_calls is not None and spend.tool_calls > self.max_tool_calls:
            return (
                f"budget reached: max_tool_calls={self.max_tool_calls}; the model asked for "
                f"{spend.tool_calls} tool call(s); {before}"
            )
        return None


def _recorded(dag: Any, run: Node) -> _Spend:
    """What the model calls recorded inside `run` used (a resumed run's earlier part;
    nothing for a new run)."""
    spend = _Spend()
    pending = [run.id]
    while pending:
        for child in dag.children(pending.pop()):
            if child.kind == "llm" and child.usage is not None:
                spend.add(child.usage, len(child.meta.get("tool_calls") or ()))
            pending.append(child.id)
    return spend
