"""Matching a re-run against a recording: input hashes (format 5's too), call paths, the
Resumer, and which recorded results may stand for a call (opaque values run again).
A call is identified by its parent frame, kind, name, ordinal among those siblings and
input hash. session.py asks the Resumer for each new call; replay.py uses the paths.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel, TypeAdapter

from openprogram.core._secrets import scrub
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.image import ImageRef, is_image
from openprogram.core.values import kinds, rebuilt, stored_text, to_jsonable

__all__ = ["Divergence", "Resumer", "call_path", "input_hash", "path_text"]

log = logging.getLogger("openprogram")

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

Step = tuple[str, str, int]
"""(kind, name, ordinal among the parent's children of that kind and name)."""


def input_hash(value: object, hidden: Iterable[str] = ()) -> str:
    """sha256 of a node input in its stored form (values.to_jsonable), as canonical JSON
    (sorted keys, images by hash); `hidden` parameters (handles such as a desktop, whose
    state changes as the program acts) are left out."""
    if hidden and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in hidden}
    elif isinstance(value, str):  # an llm() content given as a string: the same as its one
        value = [{"type": "text", "text": value}]  # part (as sessions recorded it before)
    # keys are masked in the recording, so the live input is compared masked too
    return _digest(scrub(stored_text(value), patterns=False, refresh=False))


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def legacy_input_hash(
    value: object, hidden: Iterable[str], add_image: Callable[[Any], ImageRef]
) -> tuple[str, bool]:
    """(input hash as format_version 5 and older took it, whether that form lost what the
    value was) of a live input: those versions stored what JSON cannot hold as its repr,
    with memory addresses blanked, so such a record may stand for another value."""
    if hidden and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in hidden}
    elif isinstance(value, str):
        value = [{"type": "text", "text": value}]
    lossy: list[bool] = []
    form = _legacy_jsonable(value, add_image, 0, set(), lossy)
    text = json.dumps(
        form, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_image_json
    )
    text = scrub(_ADDRESS.sub(" at 0x", text), patterns=False, refresh=False)
    return _digest(text), bool(lossy)


def recorded_legacy_hash(value: object, hidden: Iterable[str]) -> str:
    """The format_version 5 input hash of a node recorded in that format."""
    if hidden and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in hidden}
    elif isinstance(value, str):
        value = [{"type": "text", "text": value}]
    text = json.dumps(
        value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_image_json
    )
    return _digest(scrub(_ADDRESS.sub(" at 0x", text), patterns=False, refresh=False))


def _image_json(item: Any) -> Any:
    return item.to_json() if isinstance(item, ImageRef) else str(item)


def _legacy_jsonable(
    value: Any, add_image: Callable[[Any], ImageRef], depth: int, active: set[int], lossy: list[Any]
) -> Any:
    """values.to_jsonable as format_version 5 had it; appends to `lossy` where it kept
    only a repr or a marker."""
    if isinstance(value, (str, int, float, bool, type(None))):
        if type(value) is int and value.bit_length() > 13_000:
            lossy.append(True)  # that version could not record it at all
            return "<int>"
        return value
    if isinstance(value, ImageRef):
        return value
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        if id(value) in active or depth >= 100:
            lossy.append(True)
            why = "cycle" if id(value) in active else "nested deeper than 100 levels"
            return f"<{why}: {type(value).__name__}>"
        if isinstance(value, (set, frozenset)):
            lossy.append(True)  # its order changed from process to process
        active.add(id(value))
        if isinstance(value, Mapping):
            result: Any = {
                str(k): _legacy_jsonable(v, add_image, depth + 1, active, lossy)
                for k, v in value.items()
            }
            if any(not isinstance(k, str) for k in value):
                lossy.append(True)
        else:
            result = [_legacy_jsonable(v, add_image, depth + 1, active, lossy) for v in value]
        active.discard(id(value))
        return result
    if is_image(value):
        return add_image(value)
    if isinstance(value, BaseModel):
        inner: Any = value.model_dump(mode="python")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        inner = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    elif isinstance(value, enum.Enum):
        inner = value.value
    elif isinstance(value, PurePath):
        return str(value)
    else:
        lossy.append(True)
        try:
            return repr(value)
        except Exception:
            return f"<repr failed: {type(value).__name__}>"
    if id(value) in active or depth >= 100:
        lossy.append(True)
        return f"<cycle: {type(value).__name__}>"
    active.add(id(value))
    try:
        return _legacy_jsonable(inner, add_image, depth + 1, active, lossy)
    finally:
        active.discard(id(value))


def path_text(path: tuple[Step, ...]) -> str:
    """'gui_agent #1 / gui_step #3 / llm plan_next_action #1'."""
    return " / ".join(f"{'llm ' if kind == 'llm' else ''}{name} #{k}" for kind, name, k in path)


def top_level_chain(dag: ContextDAG) -> list[Node]:
    """The top-level nodes on the DAG's current branch (its own and those it forked
    from), in seq order; also right after a fork, when the branch has none of its own."""
    return [n for n in dag.children(None) if dag.on_branch(n, dag.branch, sys.maxsize)]


def call_path(dag: ContextDAG, node: Node) -> tuple[Step, ...]:
    """Where `node` sits: one step per frame from the top level down to the node."""
    path: list[Step] = []
    current: Node | None = node
    while current is not None:
        parent = current.parent
        siblings = top_level_chain(dag) if parent is None else dag.children(parent)
        k = sum(
            1
            for s in siblings
            if s.seq <= current.seq and s.kind == current.kind and s.name == current.name
        )
        path.append((current.kind, current.name, k))
        current = dag.get(current.parent)
    return tuple(reversed(path))


def all_call_paths(dag: ContextDAG) -> dict[tuple[Step, ...], Node]:
    """Every code and llm node on the current branch by its call path."""
    on_chain = {n.id for n in top_level_chain(dag)}
    counts: dict[tuple[str | None, str, str], int] = {}
    paths: dict[str | None, tuple[Step, ...]] = {None: ()}
    found: dict[tuple[Step, ...], Node] = {}
    for node in dag.nodes:
        if node.parent is None and node.id not in on_chain:
            continue
        parent_path = paths.get(node.parent)
        if parent_path is None:  # under a node off the branch
            continue
        key = (node.parent, node.kind, node.name)
        counts[key] = counts.get(key, 0) + 1
        path = (*parent_path, (node.kind, node.name, counts[key]))
        paths[node.id] = path
        if node.kind != "user":
            found[path] = node
    return found


@dataclass(frozen=True)
class Divergence:
    """A new call whose place is recorded with a different input."""

    recorded: Node
    ordinal: int


class Resumer:
    """The recorded calls of a resumed session, claimed one by one as the program re-runs.

    Built from the DAG as loaded; calls created live afterwards are never candidates.
    Thread-safe: concurrent calls of one name in one frame may arrive in another order
    than recorded, so a call whose k-th recorded sibling differs takes any unclaimed
    sibling with its input hash before a divergence is declared.
    """

    def __init__(self, dag: ContextDAG) -> None:
        self.dag = dag
        self.legacy = dag.legacy_values  # nodes recorded by format_version 5 or older
        self._lock = threading.Lock()
        self._records: dict[tuple[str | None, str, str], list[Node]] = {}
        self._hashes: dict[str, str] = {}
        self._claimed: set[str] = set()
        self._counts: dict[tuple[str | None, str, str], int] = {}
        self._by_parent: dict[str | None, list[Node]] = {}
        self.reused: set[str] = set()
        self.last_alive = max(
            (t for n in dag.nodes for t in (n.started_at, n.ended_at) if t is not None),
            default=0.0,
        )  # the last time the run before was seen alive: its latest record
        on_chain = {n.id for n in top_level_chain(dag)}
        for node in dag.nodes:
            if node.kind == "user" or (node.parent is None and node.id not in on_chain):
                continue
            self._records.setdefault((node.parent, node.kind, node.name), []).append(node)
            self._by_parent.setdefault(node.parent, []).append(node)

    def _hash(self, node: Node) -> str:
        digest = self._hashes.get(node.id)
        if digest is None:
            if node.id in self.legacy:
                digest = recorded_legacy_hash(node.input, node.hidden_inputs)
            else:
                digest = input_hash(node.input, node.hidden_inputs)
            self._hashes[node.id] = digest
        return digest

    def match(
        self,
        kind: str,
        name: str,
        parent: str | None,
        digest: str,
        legacy: Callable[[], str] | None = None,
    ) -> Node | Divergence | None:
        """The recorded node for this call, a Divergence, or None (run it live).
        `legacy` gives the call's input hash as format_version 5 took it, for the nodes
        recorded so."""
        key = (parent, kind, name)
        live: dict[bool, str] = {False: digest}

        def same(node: Node) -> bool:
            old = node.id in self.legacy
            if old and old not in live:
                if legacy is None:
                    return False
                live[old] = legacy()
            return self._hash(node) == live[old]

        with self._lock:
            k = self._counts[key] = self._counts.get(key, 0) + 1
            candidates = self._records.get(key)
            if not candidates:
                return None
            preferred = candidates[k - 1] if k <= len(candidates) else None
            if preferred is not None and preferred.id not in self._claimed and same(preferred):
                return self._claim(preferred)
            for node in candidates:
                if node.id not in self._claimed and same(node):
                    return self._claim(node)
            if preferred is None:  # more calls here than recorded: the live part
                return None
            if preferred.id in self._claimed:  # taken out of order; compare with the rest
                preferred = next((n for n in candidates if n.id not in self._claimed), None)
            return None if preferred is None else Divergence(preferred, k)

    def find(
        self,
        kind: str,
        name: str,
        parent: str | None,
        value: object,
        hidden: Iterable[str],
        raw: object,
        add_image: Callable[[Any], ImageRef],
    ) -> tuple[Node | Divergence | None, str | None]:
        """match() for a live input (`value` stored, `raw` as given), and for a completed
        recorded call why its record cannot answer this one (None when it can)."""
        lossy: list[bool] = []

        def legacy() -> str:
            digest, lost = legacy_input_hash(raw, hidden, add_image)
            lossy.append(lost)
            return digest

        found = self.match(kind, name, parent, input_hash(value, hidden), legacy)
        if kind != "code" or not isinstance(found, Node) or found.status != "completed":
            return found, None
        return found, rerun_reason(found, found.id in self.legacy, any(lossy))

    def _claim(self, node: Node) -> Node:
        self._claimed.add(node.id)
        return node

    def unclaimed_running(self, parent: str | None) -> list[Node]:
        """Recorded nodes under `parent` (recursively) that are still running and were not
        taken up by the re-run: left over from the interrupted process."""
        with self._lock:
            found: list[Node] = []
            stack = list(self._by_parent.get(parent, ()))
            while stack:
                node = stack.pop()
                if node.id in self._claimed and node.id not in self.reused:
                    continue  # replayed whole: its subtree is as recorded
                if node.id not in self._claimed and node.status == "running":
                    found.append(node)
                stack.extend(self._by_parent.get(node.id, ()))
            return sorted(found, key=lambda n: n.seq)


# -- values that cannot stand for themselves ----------------------------------------------

_noted: set[tuple[str, str]] = set()
_noted_lock = threading.Lock()


def stored_value(
    function: str,
    value: object,
    add_image: Callable[[Any], ImageRef],
    *,
    hidden: Iterable[str] = (),
    returned: bool = False,
) -> object:
    """values.to_jsonable(value), warning (note_opaque) about what has no stored form."""
    opaque: list[str] = []
    form = to_jsonable(value, add_image, opaque, hidden=tuple(hidden))
    if opaque:
        note_opaque(function, opaque, returned=returned)
    return form


_WHAT = {
    "secret": "a secret ({} in a field named like a key or password), which is never stored,",
    "cycle": "a {} that refers to itself,",
}


def note_opaque(function: str, names: Iterable[str], *, returned: bool) -> None:
    """Warn, once per type and direction in this process, that `function` took (or
    returned) values with no faithful stored form, and what resuming will do about it.
    `names` are values.to_jsonable's: "type" or "type (why)"."""
    direction = "returned" if returned else "was given"
    for name in dict.fromkeys(names):
        with _noted_lock:
            if (direction, name) in _noted:
                continue
            _noted.add((direction, name))
        kind, _, why = name.partition(" (")
        what = _WHAT.get(
            why.rstrip(")"),
            "a {}, which has no faithful stored form" if not why else "a {} nested too deep,",
        ).format(kind)
        log.warning(
            "openprogram: %s %s %s: it is recorded as {\"$opaque\": \"%s\"}, and a "
            "resumed run calls %s again instead of %s (said once per type)",
            function, direction, what, kind, function,
            "handing back a stand-in" if returned else "answering it from the record",
        )  # fmt: skip


def note_once(key: str, message: str, *args: Any) -> None:
    """Log `message` at warning level the first time `key` is seen in this process."""
    with _noted_lock:
        if ("once", key) in _noted:
            return
        _noted.add(("once", key))
    log.warning(message, *args)


def forget_notes() -> None:
    """Say every note again (tests)."""
    with _noted_lock:
        _noted.clear()


_STAND_IN = re.compile(r"<.* at 0x[0-9a-fA-F]+>", re.DOTALL)


def rerun_reason(node: Node, legacy: bool, legacy_lossy: bool) -> str | None:
    """Why a completed recorded call cannot be answered from its record whatever it
    returned (it runs again), or None: it took an opaque value, or was recorded by
    format_version 5 with an input that version kept only as a repr."""
    if legacy:
        return "its input was recorded as a repr by an older openprogram" if legacy_lossy else None
    if kinds(node.input, skip=tuple(node.hidden_inputs))[0]:
        return "it takes a value with no stored form"
    return None


NOT_ANSWERED = object()
"""What resumed_output() gives for a record that cannot stand for the call's value."""


def resumed_output(
    node: Node,
    legacy: bool,
    adapter: TypeAdapter[Any] | None,
    revive: Callable[[Any], Any],
    convert: Callable[[Any], Any],
) -> object:
    """The value a completed recorded call hands back, or NOT_ANSWERED (it runs again).

    Plain JSON comes back as recorded (validated into the return annotation when there
    is one); a typed value only when it is rebuilt, standard types directly and others
    through the annotation's validator, and the rebuilt value stores exactly as the
    record (`convert` gives its stored form); an opaque one never."""
    output = node.output
    if legacy:  # format_version 5 kept non-JSON results as their repr
        if isinstance(output, str) and _STAND_IN.fullmatch(output):
            return NOT_ANSWERED
        value = revive(output)
        if adapter is None:
            return value
        try:
            return adapter.validate_python(value)
        except Exception:
            return NOT_ANSWERED
    opaque, typed = kinds(output)
    if opaque:
        return NOT_ANSWERED
    if not typed:
        value = revive(output)
        if adapter is None:
            return value
        try:
            return adapter.validate_python(value)
        except Exception as exc:
            log.warning(
                "openprogram: recorded output of %s (node %s) does not validate as its "
                "return annotation; returning it as recorded: %s", node.name, node.id, exc,
            )  # fmt: skip
            return value
    expected = stored_text(output)
    for fields in (False, True):
        if fields and adapter is None:
            break
        try:
            value = revive(rebuilt(output, fields=fields))
            if adapter is not None:
                value = adapter.validate_python(value)
            if stored_text(convert(value)) == expected:
                return value
        except Exception:  # NotRebuildable, the annotation refuses it, a broken object
            continue
    return NOT_ANSWERED
