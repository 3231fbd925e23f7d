"""Recorder: the DAG listener that makes a session durable.

Writes a node when it is created and again when it completes (one store transaction
each, images first), so a killed process loses at most what was in flight. A failing
store is logged, never raised: recording must not change the program's behaviour.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from openprogram._secrets import scrub_exception, scrub_json
from openprogram.dag import ContextDAG, Node
from openprogram.store.base import Store
from openprogram.store.format import NodeRow, ReadsBase, encode_node, reads_overlap

__all__ = ["Recorder"]

log = logging.getLogger("openprogram.store")


class Recorder:
    """Append to `dag.listeners`: records every "created"/"completed" event of `dag`
    into session `session` of `store`. `failures` counts writes that failed; `rows` holds
    the seqs of the session's rows known to be stored (`stored_rows` at the start)."""

    def __init__(
        self,
        store: Store,
        session: str,
        dag: ContextDAG,
        stored_blobs: Iterable[str] = (),
        stored_rows: Iterable[int] = (),
    ) -> None:
        self.store = store
        self.session = session
        self.dag = dag
        self.failures = 0
        self.rows: set[int] = set(stored_rows)
        self._sent: set[str] = set(stored_blobs)
        self._inputs: dict[str, tuple[str, list[str]]] = {}
        self._reads: dict[str, tuple[str, list[str]]] = {}  # function -> newest llm reads

    @property
    def sent(self) -> set[str]:
        """Hashes of the images this recorder knows to be in the store."""
        return self._sent

    def __call__(self, event: str, node: Node) -> None:
        try:
            self.write(node, created=event == "created")
        except Exception as exc:
            self.failures += 1
            if self.failures & (self.failures - 1) == 0:  # the 1st, 2nd, 4th, 8th...: no flood
                log.error(
                    "openprogram: could not record node %s (%s #%s) of session %s in %s "
                    "(%d failed writes so far): %s",
                    node.id, node.name, node.seq, self.session, self.store.url,
                    self.failures, scrub_exception(exc), exc_info=self.failures == 1,
                )  # fmt: skip

    def write(self, node: Node, *, created: bool) -> None:
        """Write the node as it is now; raises what the store raises."""
        refs: list[str] = []
        cached = None if created else self._inputs.pop(node.id, None)
        reads_base = self._reads_base(node)
        if cached is not None:
            refs.extend(cached[1])
            row = encode_node(node, refs, cached[0], reads_base)
        else:
            row = encode_node(node, refs, reads_base=reads_base)
            if created and node.status == "running" and row.input is not None:
                self._inputs[node.id] = (row.input, list(refs))
        row = _scrubbed(row)
        blobs: dict[str, bytes] = {}
        for sha in refs:
            if sha in self._sent or sha in blobs:
                continue
            image = self.dag.blobs.get(sha)
            if image is not None:
                blobs[sha] = image.png()
        self.store.write(self.session, row, blobs)
        self.rows.add(row.seq)
        self._sent.update(blobs)
        if node.kind == "llm" and node.status == "completed" and node.reads:
            self._reads[node.name] = (node.id, node.reads)  # a completed node's reads stay

    def _reads_base(self, node: Node) -> ReadsBase | None:
        """Where `node`'s reads can be stored as a slice of an earlier, recorded node's."""
        if node.kind != "llm" or not node.reads:
            return None
        base = self._reads.get(node.name)
        if base is None or base[0] == node.id:
            return None
        overlap = reads_overlap(base[1], node.reads)
        return None if overlap is None else (base[0], *overlap)


def _scrubbed(row: NodeRow) -> NodeRow:
    """The row with secret values (keys, tokens) masked in its JSON columns."""
    values = (
        scrub_json(row.input, refresh=False),
        scrub_json(row.output, refresh=False),
        scrub_json(row.data, refresh=False),
    )
    if values == (row.input, row.output, row.data):
        return row
    return row._replace(input=values[0], output=values[1], data=values[2])
