"""Resuming a recorded run: how a re-run call finds its recorded node and what it gets.

Owns the Session's side of DESIGN.md §6 "Resume": answering a call from its record (its
output validated into the function's return type, images made live), reopening a node
that must run again, divergence errors and the leftovers a resumed run never reached.
Session (session.py) inherits it; the matching itself is _resume.Resumer's. Start at
Resuming._resume().
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import time
from collections.abc import Callable
from typing import Any, Protocol

from pydantic import ConfigDict, TypeAdapter

from openprogram.agentic._resume import (
    NOT_ANSWERED,
    Divergence,
    Resumer,
    call_path,
    note_once,
    path_text,
    resumed_output,
)
from openprogram.agentic._signature import resolved_annotations
from openprogram.core import _context, _secrets
from openprogram.core.dag import ContextDAG, Kind, Node
from openprogram.core.image import ImageRef
from openprogram.errors import ResumeDivergence, SessionLocked
from openprogram.render._history import forget
from openprogram.session import effects

__all__ = ["Resuming"]

log = logging.getLogger("openprogram")

_INTERRUPTED = (
    "interrupted: the process ended during this call, and the resumed run did not call it again"
)
_NO_ADAPTER = object()


class _Resumed(effects.EffectSession, Protocol):
    """What resuming a call uses of the Session that inherits Resuming: what effects.py
    takes, and Resuming's own state."""

    _resumer: Resumer | None

    def _code_changed(self, node: Node, settings: dict[str, Any]) -> str | None: ...

    def _reopen(self, node: Node, kind: Kind, extra: dict[str, Any], why: str | None) -> None: ...

    def _divergence(self, recorded: Node, value: Any) -> ResumeDivergence: ...


class Resuming:
    """The resume half of Session: it needs the Session's `dag`, `_resumer`, `_adapters`
    and `rewrite`, and where a call meets effects.py, what that takes (_Resumed)."""

    dag: ContextDAG
    _resumer: Resumer | None
    _adapters: dict[Any, Any]
    rewrite: Callable[[Node], None]

    def resumed_output(self, node: Node, fn: object) -> object:
        """The value a resumed call returns instead of running: its recorded output,
        validated into `fn`'s return annotation when it has one (so a pydantic model
        comes back as that model), images as PIL images. A record that cannot stand for
        the value (values.py: opaque, or not rebuilt faithfully) reopens the node
        instead: the call runs again."""
        legacy = node.id in self.dag.legacy_values
        value = resumed_output(node, legacy, self._adapter(fn), self._revive, self.dag.jsonable)
        if value is NOT_ANSWERED and node.meta.get("effect") == "once":  # never run twice
            return self._revive(node.output)
        if value is NOT_ANSWERED:
            self._reopen(node, "code", {}, "its recorded result cannot stand for its value")
        return value

    def _adapter(self, fn: Any) -> Any:
        adapter = self._adapters.get(fn, _NO_ADAPTER)
        if adapter is _NO_ADAPTER:
            adapter = self._adapters[fn] = _return_adapter(fn)
        return adapter

    def _revive(self, value: Any) -> Any:
        if isinstance(value, ImageRef):
            image = self.dag.blobs.get(value.sha256)
            return value if image is None else image.pil
        if isinstance(value, dict):
            return {k: self._revive(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self._revive(v) for v in value]
        return value

    # -- resuming ------------------------------------------------------------------------
    def _resume(
        self: _Resumed,
        kind: Kind,
        name: str,
        parent: str | None,
        value: Any,
        extra: dict[str, Any],
        raw: Any,
    ) -> Node | None:
        """The recorded node standing for this call, made live again when it did not
        finish (or its record cannot stand for it); None to run the call live with a new
        node. `extra`: the decorator's settings (code) or the node's meta (llm); `raw`:
        the input before values.to_jsonable (for nodes an older format recorded)."""
        assert self._resumer is not None
        hidden = extra.get("hidden_inputs", ()) if kind == "code" else ()
        found, why = self._resumer.find(kind, name, parent, value, hidden, raw, self.dag.add_image)
        if found is None:
            return None
        if isinstance(found, Divergence):  # function.py lets this one through to the caller
            raise self._divergence(found.recorded, value)
        node = found
        if node.status == "completed":
            if why is None and kind == "code":
                why = self._code_changed(node, extra)
            if why is not None and node.meta.get("effect") != "once":  # its input has no
                self._reopen(node, kind, extra, why)  # stored form (a once call never reruns)
            return node
        once = kind == "code" and node.meta.get("effect") == "once"
        theirs = effects.shared(self, node) if once else None
        if theirs is not None:  # a fork's parent's once call: never settled or run here
            raise theirs
        if kind == "code" and effects.interrupted(node):  # never run again unless settled:
            effects.settle_or_raise(self, node)  # EffectUnknown (function.py lets it through)
            settled: str = node.status  # completed when a settled result stands for it
            if settled == "completed":
                return node
        if once:  # it runs again: only while the store holds it as this run loaded it
            effects.claim_rerun(self, node)
        if kind == "llm" and node.output is not None and node.status == "error":
            node.status, node.error = "completed", None  # a reply that failed validation:
            self.rewrite(node)  # replay it; llm() marks it invalid again and re-asks
            return node
        self._reopen(node, kind, extra, None)
        return node

    def _code_changed(self, node: Node, settings: dict[str, Any]) -> str | None:
        """Why completed code `node` runs again because its code changed since it was
        recorded (on_code_change="latest"), or None to answer it from its record
        ("keep"); raises ResumeDivergence for "refuse". The function's setting wins
        over the Runtime's; the default keeps."""
        now = settings.get("meta", {}).get("code")
        then = node.meta.get("code")
        if now is None or then is None or now == then:
            return None
        policy = settings.get("on_code_change") or getattr(
            _context.live_runtime(), "on_code_change", None
        ) or "keep"  # fmt: skip
        if policy == "keep":
            return None
        where = path_text(call_path(self.dag, node))
        if policy == "refuse":
            raise ResumeDivergence(
                f"{where} (node {node.id}) was recorded by code {then}, and its code is "
                f"{now} now (on_code_change='refuse'): resume it with the code it was "
                "recorded by, or choose on_code_change='keep' (its recorded result) or "
                "'latest' (run it again) for this function or the Runtime",
                node_id=node.id,
            )
        node.meta["code"] = now
        return f"its code changed ({then} -> {now}; on_code_change='latest')"

    def _reopen(self, node: Node, kind: Kind, extra: dict[str, Any], why: str | None) -> None:
        """Make a recorded node live again: its call runs (again). `why` says why a
        completed call is not answered from its record."""
        assert self._resumer is not None
        if why is not None:
            node.meta["rerun"] = why
            note_once(
                f"rerun {node.name}",
                "openprogram: resuming: %s runs again instead of being answered from the "
                "record: %s (said once per function)", node.name, why,
            )  # fmt: skip
        elif node.status == "waiting":  # suspended for an answer: it goes on now
            node.meta.pop("waiting_on", None)
        elif node.status != "running":
            node.meta.setdefault("previous_errors", []).append(node.error or node.status)
        node.meta.pop("settled", None)  # settled to run again: a new interruption is unknown
        node.meta["resumed"] = int(node.meta.get("resumed", 0)) + 1
        _note_downtime(node, self._resumer.last_alive)
        if kind == "llm":
            node.meta.update(extra)
        elif (code := extra.get("meta", {}).get("code")) is not None:
            node.meta["code"] = code  # it runs (again) with the code now: say which version
        node.status, node.output, node.error = "running", None, None
        node.ended_at = node.end_seq = None
        forget(self.dag, node.id)  # renders kept its pieces and histories as finished
        self._resumer.reused.add(node.id)
        self.rewrite(node)

    def _divergence(self, recorded: Node, value: Any) -> ResumeDivergence:
        where = path_text(call_path(self.dag, recorded))
        return ResumeDivergence(
            f"the resumed run diverged at {where} (node {recorded.id}): the recording has "
            f"input {_preview(recorded.input)}, this run {_preview(value)}. Re-run the "
            "recorded program unchanged, or fork the session before that node "
            "(session.fork(at=...)) and run the changed program on the fork.",
            node_id=recorded.id,
        )

    def _cancel_leftovers(self: _Resumed, parent: str | None) -> None:
        assert self._resumer is not None
        for node in self._resumer.unclaimed_running(parent):
            if node.meta.get("effect") == "once":  # it began: its effect is unknown
                if self.shared_from(node.id) is not None:  # a fork's parent's: only the
                    continue  # parent records it
                try:
                    effects.unknown(self, node, stored=True)
                except SessionLocked as exc:  # settled meanwhile elsewhere: left as stored
                    log.warning("openprogram: %s", exc)
            else:
                self.dag.complete(node, None, status="cancelled", error=_INTERRUPTED)


def _note_downtime(node: Node, last_alive: float) -> None:
    """Add to the reopened `node`'s meta["down_s"] the seconds no process ran it: from
    the last sign of its run being alive (the latest record of the session as the resume
    found it, its own start, or its last resume) to now; its duration_s leaves them out.
    meta["resumed_at"] is when this resume took it up."""
    now = time.time()
    resumed_at = node.meta.get("resumed_at")
    last = max(last_alive, node.started_at)
    if isinstance(resumed_at, (int, float)) and math.isfinite(resumed_at):
        last = max(last, float(resumed_at))
    node.meta["down_s"] = node.down_s + max(0.0, now - last)
    node.meta["resumed_at"] = now


def _preview(value: Any, limit: int = 200) -> str:
    text = _secrets.scrub(json.dumps(value, ensure_ascii=False, default=str, sort_keys=True))
    return text if len(text) <= limit else text[:limit] + "…"


def _return_adapter(fn: Any) -> Any:
    """A pydantic TypeAdapter for fn's return annotation, or None when it has none
    (or one pydantic cannot validate)."""
    try:
        annotation = resolved_annotations(inspect.unwrap(fn)).get("return", inspect.Signature.empty)
    except Exception:
        return None
    if annotation in (inspect.Signature.empty, Any):
        return None
    for config in (None, ConfigDict(arbitrary_types_allowed=True)):
        try:
            return TypeAdapter(annotation, config=config)
        except Exception:  # a BaseModel refuses config; an arbitrary class needs it
            continue
    return None
