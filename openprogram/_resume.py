"""Matching a re-run against a recording: input hashes, call paths and the Resumer.

A call is identified by its parent frame, its kind and name, its ordinal among the
frame's children of that kind and name, and the hash of its input. session.py asks the
Resumer for the recorded node of each new call; replay.py uses the call paths.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from openprogram._secrets import scrub
from openprogram.dag import ContextDAG, Node
from openprogram.values import to_jsonable

__all__ = ["Divergence", "Resumer", "call_path", "input_hash", "path_text"]

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

Step = tuple[str, str, int]
"""(kind, name, ordinal among the parent's children of that kind and name)."""


def input_hash(value: Any, hidden: Iterable[str] = ()) -> str:
    """sha256 of a node input in canonical JSON (sorted keys, images by hash).

    `hidden` parameters (handles such as a desktop, whose state changes as the program
    acts) are left out, and memory addresses in reprs ("<Desktop object at 0x7f…>") are
    blanked: both change from run to run without the call being a different one.
    """
    if hidden and isinstance(value, dict):
        value = {k: v for k, v in value.items() if k not in hidden}
    elif isinstance(value, str):  # an llm() content given as a string: the same as its one
        value = [{"type": "text", "text": value}]  # part (as sessions recorded it before)
    text = json.dumps(
        to_jsonable(value, None),
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    # keys are masked in the recording, so the live input is compared masked too
    text = scrub(_ADDRESS.sub(" at 0x", text), patterns=False, refresh=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


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
        self._lock = threading.Lock()
        self._records: dict[tuple[str | None, str, str], list[Node]] = {}
        self._hashes: dict[str, str] = {}
        self._claimed: set[str] = set()
        self._counts: dict[tuple[str | None, str, str], int] = {}
        self._by_parent: dict[str | None, list[Node]] = {}
        self.reused: set[str] = set()
        on_chain = {n.id for n in top_level_chain(dag)}
        for node in dag.nodes:
            if node.kind == "user" or (node.parent is None and node.id not in on_chain):
                continue
            self._records.setdefault((node.parent, node.kind, node.name), []).append(node)
            self._by_parent.setdefault(node.parent, []).append(node)

    def _hash(self, node: Node) -> str:
        digest = self._hashes.get(node.id)
        if digest is None:
            digest = self._hashes[node.id] = input_hash(node.input, node.hidden_inputs)
        return digest

    def match(
        self, kind: str, name: str, parent: str | None, digest: str
    ) -> Node | Divergence | None:
        """The recorded node for this call, a Divergence, or None (run it live)."""
        key = (parent, kind, name)
        with self._lock:
            k = self._counts[key] = self._counts.get(key, 0) + 1
            candidates = self._records.get(key)
            if not candidates:
                return None
            preferred = candidates[k - 1] if k <= len(candidates) else None
            if (
                preferred is not None
                and preferred.id not in self._claimed
                and self._hash(preferred) == digest
            ):
                return self._claim(preferred)
            for node in candidates:
                if node.id not in self._claimed and self._hash(node) == digest:
                    return self._claim(node)
            if preferred is None:  # more calls here than recorded: the live part
                return None
            if preferred.id in self._claimed:  # taken out of order; compare with the rest
                preferred = next((n for n in candidates if n.id not in self._claimed), None)
            return None if preferred is None else Divergence(preferred, k)

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
