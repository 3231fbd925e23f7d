"""One recorded event: `Node`, its kinds and statuses, and the `render_range` setting.

Owns a node's fields (and how a new one is built without validation on the hot path),
`RenderRange` and its check, and the hook the notebook views register through. The DAG
that orders nodes lives in dag.py. Start at Node.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Mapping
from operator import attrgetter
from typing import Any, Literal

from pydantic import BaseModel, Field, model_serializer

from openprogram import _wiring
from openprogram.core.usage import Usage
from openprogram.errors import UsageError

__all__ = [
    "Effect",
    "Expose",
    "Kind",
    "Node",
    "RenderRange",
    "Status",
    "by_seq",
    "check_render_range",
    "register_view",
    "registered_view",
]

Kind = Literal["user", "code", "llm"]
"""user: input from outside; code: one call of a decorated function; llm: one model exchange."""
Status = Literal["running", "completed", "error", "cancelled", "stopped", "waiting", "unknown"]
"""running (not finished yet), completed, error (it raised; `error` says what), cancelled
(interrupted: KeyboardInterrupt, a cancelled task, a run that never came back), stopped
(a gate or budget ended it: RunStopped; `meta["stop_reason"]` says why), waiting (an
ask_user on its stack awaits an answer: RunWaiting; a resumed run goes on from there),
unknown (an `effect="once"` call started and never finished: whether its side effect
happened is unknown until a person settles it: `Session.settle`)."""
Effect = Literal["idempotent", "once"]
"""A call's declared side effect (`agentic_function(effect=...)`): idempotent (safe to run
again: on resume it runs again with the same `idempotency_key()`), once (at most once: a
body that started and did not finish is never run again; it is recorded `unknown`)."""
Expose = Literal["io", "llm", "full", "hidden"]
"""What callers see of a function: io (its call and result), llm (only its llm exchanges),
full (everything inside it), hidden (nothing)."""


class RenderRange(BaseModel):
    """How much history a function's own llm() calls read (DESIGN.md §4 rule 5 and
    "Compaction": `tokens` caps the rendered history's size, `keep` newest nodes stay)."""

    callers: int | None = None
    subcalls: int = -1
    tokens: int | None = None
    keep: int = 4

    def as_dict(self) -> dict[str, int | None]:
        """The setting as the decorator's dict: `tokens` and `keep` only when a budget is set."""
        value: dict[str, int | None] = {"callers": self.callers, "subcalls": self.subcalls}
        if self.tokens is not None:
            value.update(tokens=self.tokens, keep=self.keep)
        return value

    @model_serializer
    def _dump(self) -> dict[str, int | None]:
        return self.as_dict()  # dumps and stored records stay as they were without a budget

    def __eq__(self, other: object) -> bool:
        """Equal to another RenderRange, or to the dict the decorator was given (a code
        node's `render_range` is the decorator's setting)."""
        if isinstance(other, Mapping):
            given = {"subcalls": -1, "callers": None, **other}
            if given.get("tokens") is not None:
                given.setdefault("keep", 4)
            return self.as_dict() == given
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, like any BaseModel

    def __getitem__(self, key: str) -> int | None:
        """`range["callers"]`, as on the decorator's dict."""
        if key not in _RANGE_KEYS:
            raise KeyError(key)
        return getattr(self, key)  # type: ignore[no-any-return]


_RANGE_KEYS = ("callers", "subcalls", "tokens", "keep")


_VIEWS: dict[str, Callable[[Any], str]] = {}


def register_view(
    kind: Literal["dag", "node", "context", "call"], renderer: Callable[[Any], str]
) -> None:
    """Make `renderer(value)` the notebook HTML of a ContextDAG, a Node, a RenderedContext
    or a CallView (display/calls.py).

    The data layer never imports the views: openprogram.display registers them when it is
    imported, which the first view asked for does (through the loader the package root
    provides, _wiring.py's "views"), so the data knows only this hook (and
    display/calls.py, which display/html.py draws, need not import it back).
    """
    _VIEWS[kind] = renderer


def registered_view(kind: str) -> Callable[[Any], str]:
    """The renderer registered for `kind` ("node", "dag", "context", "call"), importing
    openprogram.display on first use so it registers them."""
    if kind not in _VIEWS:
        _wiring.factory("views")()  # imports openprogram.display, which registers them all
    return _VIEWS[kind]


def check_render_range(value: Mapping[str, Any] | RenderRange | None) -> RenderRange | None:
    """A `render_range` dict as a RenderRange (None stays None); UsageError naming the bad
    key or value otherwise."""
    if value is None:
        return None
    if isinstance(value, RenderRange):
        return value
    if not isinstance(value, Mapping):
        raise UsageError(
            f"render_range={value!r} must be a dict with 'callers', 'subcalls' and/or 'tokens'"
        )
    unknown = set(value) - set(_RANGE_KEYS)
    if unknown:
        raise UsageError(
            f"render_range key {sorted(unknown)[0]!r} is unknown; use 'callers', 'subcalls', "
            "'tokens' and 'keep'"
        )
    callers = value.get("callers")
    subcalls = value.get("subcalls", -1)
    tokens = value.get("tokens")
    keep = value.get("keep", 4)
    if callers is not None and not _count(callers, 0):
        raise UsageError(f"render_range callers={callers!r} must be None or an int >= 0")
    if not _count(subcalls, -1):
        raise UsageError(f"render_range subcalls={subcalls!r} must be an int >= -1")
    if tokens is not None and not _count(tokens, 1):
        raise UsageError(f"render_range tokens={tokens!r} must be None or an int >= 1")
    if not _count(keep, 0):
        raise UsageError(f"render_range keep={keep!r} must be an int >= 0")
    return RenderRange(callers=callers, subcalls=subcalls, tokens=tokens, keep=keep)


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


class Node(BaseModel):
    """One recorded event: a call (code), a model exchange (llm) or an outside input (user)."""

    # A weak reference to the ContextDAG that holds the node, set when the DAG inserts it
    # (dag_of reads it). A slot, not a field or private attribute: pydantic leaves it out
    # of equality, dumps, copies and pickles, so a copy or an unpickled node holds none.
    __slots__ = ("_dag",)

    id: str
    seq: int
    kind: Kind
    name: str
    parent: str | None = None
    predecessor: str | None = None
    branch: str = "main"
    input: Any = None
    output: Any = None
    status: Status = "running"
    error: str | None = None
    expose: Expose = "io"
    render_range: RenderRange | None = None
    hidden_inputs: list[str] = Field(default_factory=list)
    system: str | None = None
    reads: list[str] = Field(default_factory=list)
    messages_hash: str | None = None
    usage: Usage | None = None
    started_at: float = 0.0
    ended_at: float | None = None
    end_seq: int | None = None
    meta: dict[str, Any] = Field(default_factory=dict)

    @property
    def duration_s(self) -> float | None:
        """Seconds the call ran: from its start to its end, less the time no process ran
        it (`down_s`: a resumed call's, between the crash or stop and the resume)."""
        if self.ended_at is None:
            return None
        return max(0.0, self.ended_at - self.started_at - self.down_s)

    @property
    def down_s(self) -> float:
        """Seconds between its start and end when no process ran it: from the last sign
        of its run alive to each resume that took it up again (meta["down_s"]); 0.0 for
        a call never resumed."""
        down = self.meta.get("down_s")
        if isinstance(down, bool) or not isinstance(down, (int, float)):
            return 0.0
        return float(down) if math.isfinite(down) and down > 0 else 0.0

    def __repr__(self) -> str:
        # the whole record (inputs, outputs, screenshots' references) runs to kilobytes
        return (
            f"Node(id={self.id!r}, seq={self.seq}, kind={self.kind!r}, name={self.name!r}, "
            f"status={self.status!r})"
        )

    def _repr_html_(self) -> str:
        return registered_view("node")(self)


_ids = random.Random()  # seeded from os.urandom; seeded again in a fork child (below)


def _new_id() -> str:
    """A new node's id: 64 random bits as 16 hex digits, drawn from a generator seeded
    by os.urandom rather than from os.urandom itself, a system call: it lets go of the
    interpreter, and with threads recording that is a hand-off to another thread (and
    back) for every node."""
    return f"{_ids.getrandbits(64):016x}"


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_ids.seed)


# Every node has every field set; one shared set serves them all (pydantic only ever
# adds names to it, which are all in it already), saving a set per recorded node.
_ALL_FIELDS_SET = set(Node.model_fields)


def _new_node(values: dict[str, Any]) -> Node:
    """A Node from trusted values without validation (what model_construct does, minus
    its per-field bookkeeping): recording a call must stay within microseconds."""
    node = Node.__new__(Node)
    object.__setattr__(node, "__dict__", values)
    object.__setattr__(node, "__pydantic_fields_set__", _ALL_FIELDS_SET)
    object.__setattr__(node, "__pydantic_extra__", None)
    object.__setattr__(node, "__pydantic_private__", None)
    return node


by_seq = attrgetter("seq")
"""A node's seq: the key nodes are sorted and searched by."""
