"""The stored form of a session: format version, session info and node rows.

Owns FORMAT_VERSION, the version check every store runs when it opens, and the
Node <-> row encoding shared by all backends, so stores only move rows and bytes.
The format is described in docs/sessions.md; start at encode_node().
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from json.encoder import (  # type: ignore[attr-defined]  # private C helpers, no stubs
    c_make_encoder,
    encode_basestring,
)
from typing import Any, NamedTuple

from pydantic import BaseModel, ValidationError

from openprogram.core._secrets import scrub_json
from openprogram.core.dag import Node
from openprogram.core.image import ImageRef
from openprogram.core.values import escape_surrogates, from_jsonable, to_jsonable
from openprogram.echo import echo
from openprogram.errors import StoreDamaged, StoreError, UnsupportedFormatVersion, UsageError

__all__ = [
    "FORMAT_VERSION",
    "LEASES_VERSION",
    "MAX_ID_BYTES",
    "OLDEST_VERSION",
    "OLD_VALUES_MIGRATION",
    "ROW_COLUMNS",
    "VALUES_VERSION",
    "NodeRow",
    "SessionInfo",
    "check_format_version",
    "check_id_size",
    "decode_after",
    "decode_node",
    "decode_rows",
    "encode_json",
    "encode_node",
    "image_refs",
    "reads_overlap",
]

FORMAT_VERSION = 9
"""Version of the stored layout (tables, row encoding). Bump on any change an older reader
would misread; add a migration from the previous version (docs/sessions.md). 9 added the
shared budgets table (store/_budgets.py; an older openprogram would let its runs past
every shared limit); 8 added the operations tables (store/_operations.py) and the node
status `unknown` (an effect="once" call that was interrupted; an older reader calls such
a row damaged); 7 added the node status `waiting` (an ask_user awaits an answer; an
older reader calls such a row damaged); 6 stores non-JSON values by their fields and
type (values.py; older versions kept their repr, so their sessions note up to which seq:
`old_values_until`); 5 stores an llm node's string content as a string (an older resume
would call it another input than the one-part list it recorded); 4 stores an llm node's
render report relative to an earlier node's (`report_base`: an older reader would show
part of it); 3 added the node status `stopped` (an older reader calls such a row
damaged); 2 added the writer leases table (openprogram_leases); older ones are migrated
when opened."""
LEASES_VERSION = 2
"""The format_version that added the writer leases table."""
VALUES_VERSION = 6
"""The format_version that stores values by their fields (values.py)."""
OLD_VALUES_MIGRATION = (
    "UPDATE openprogram_sessions SET info = '{\"old_values_until\":' || "
    "(SELECT MAX(seq) FROM openprogram_nodes WHERE session = openprogram_sessions.key) || "
    "CASE WHEN trim(info) IN ('', '{}') THEN '}' ELSE ',' || substr(ltrim(info), 2) END "
    "WHERE EXISTS (SELECT 1 FROM openprogram_nodes WHERE session = openprogram_sessions.key)",
)
"""format_version 5 -> 6 (both backends): each session with nodes notes the last seq
whose values were stored the older way, as `old_values_until` in its info."""
OLDEST_VERSION = 1
"""The oldest format_version this openprogram reads (and migrates when it writes)."""


ReadsBase = tuple[str, int, int]
"""(node id, start, count): the first `count` reads are that node's reads[start:start+count]."""


class NodeRow(NamedTuple):
    """One node as stored: the fields every node has as columns, the rest as JSON text.

    `input` and `output` are JSON (None when the value is None); `data` is a JSON object
    of the remaining Node fields that differ from their defaults (None when none do).
    """

    seq: int
    id: str
    kind: str
    name: str
    parent: str | None
    status: str
    started_at: float
    ended_at: float | None
    end_seq: int | None
    input: str | None
    output: str | None
    data: str | None


ROW_COLUMNS = (
    "seq, id, kind, name, parent, status, started_at, ended_at, end_seq, input, output, data"
)
"""NodeRow's fields as SQL column names, in order."""


MAX_ID_BYTES = 2000
"""The longest session (and run) id, in bytes of UTF-8, any store takes: PostgreSQL
indexes an id in a btree row of at most about 2 700 bytes, and a store's ids are the
same whatever backend holds them."""


def check_id_size(id: str) -> None:
    """UsageError for an id longer than MAX_ID_BYTES, before any store sees it (on
    PostgreSQL the insert would fail in the driver, on SQLite a later move to it)."""
    size = len(id.encode("utf-8", "surrogatepass"))
    if size > MAX_ID_BYTES:
        raise UsageError(
            f"id={echo(id)} is {size} bytes of UTF-8; a session or run id is at most "
            f"{MAX_ID_BYTES} (every store indexes it). Use a shorter id, e.g. a hash of "
            "the long one (hashlib.sha256(text.encode()).hexdigest())"
        )


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """A session's entry in a store. A fork names its `parent`, the node it was forked
    `at`, the `cut` seq (the parent's history as of then) and its own `branch`."""

    id: str
    created_at: float
    parent: str | None = None
    at: str | None = None
    cut: int | None = None
    branch: str = "main"
    nodes: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    old_values_until: int | None = None
    """The last seq whose values format_version 5 or older stored (their reprs)."""

    def old_values(self, seq: int, store_version: int) -> bool:
        """Whether the node `seq` of this session holds values as format 5 stored them."""
        if store_version < VALUES_VERSION:
            return True
        return self.old_values_until is not None and seq <= self.old_values_until

    def to_json(self) -> str:
        """The JSON stored beside the id and creation time (fork details, extras)."""
        data: dict[str, Any] = {}
        if self.parent is not None:
            data.update(parent=self.parent, at=self.at, cut=self.cut)
        if self.branch != "main":
            data["branch"] = self.branch
        if self.extra:
            data["extra"] = self.extra
        if self.old_values_until is not None:
            data["old_values_until"] = self.old_values_until
        return scrub_json(json.dumps(data, separators=(",", ":"))) or "{}"

    @classmethod
    def from_json(cls, id: str, created_at: float, text: str, nodes: int = 0) -> SessionInfo:
        """The entry as stored; raises StoreDamaged naming the session when it is not one."""
        try:
            data = json.loads(text) if text else {}
            if not isinstance(data, dict):
                raise TypeError(f"info holds a JSON {type(data).__name__}, not an object")
            return cls(
                id=str(id),
                created_at=float(created_at),
                parent=data.get("parent"),
                at=data.get("at"),
                cut=None if data.get("cut") is None else int(data["cut"]),
                branch=str(data.get("branch", "main")),
                nodes=nodes,
                extra=dict(data.get("extra", {})),
                old_values_until=(
                    None if data.get("old_values_until") is None else int(data["old_values_until"])
                ),
            )
        except (TypeError, ValueError) as exc:
            raise StoreDamaged(
                f"the entry of session {id!r} cannot be read: {_reason(exc)}. It was "
                "damaged or written by something other than openprogram; restore the store "
                "from a backup (`openprogram sessions check` lists what is readable)"
            ) from exc


def check_format_version(found: object, where: str) -> int:
    """The store's version as an int; raises UnsupportedFormatVersion unless this code
    reads it (OLDEST_VERSION to FORMAT_VERSION; older ones are migrated on writing)."""
    try:
        version = int(str(found))
    except ValueError:
        version = -1
    if not OLDEST_VERSION <= version <= FORMAT_VERSION:
        raise UnsupportedFormatVersion(
            f"{where} has format_version {found!r}, but this openprogram reads "
            f"format_version {OLDEST_VERSION} to {FORMAT_VERSION}. "
            + (
                "Upgrade openprogram to open it."
                if version > FORMAT_VERSION
                else "It was not written by a known openprogram version; nothing was changed."
            )
        )
    return version


def _default(item: Any) -> Any:
    if isinstance(item, ImageRef):
        return item.to_json()
    if isinstance(item, BaseModel):
        return item.model_dump(mode="json")
    if isinstance(item, (set, frozenset, tuple)):
        return list(item)
    return repr(item)


_encode: Callable[[Any], str]
if c_make_encoder is not None:  # one reusable C encoder: json.dumps builds one per call
    _C_ENCODE = c_make_encoder(
        None, _default, encode_basestring, None, ":", ",", False, False, True
    )

    def _encode(value: Any) -> str:
        return "".join(_C_ENCODE(value, 0))

else:  # pragma: no cover - interpreters without the C accelerator
    _encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=_default).encode

_IMAGE = re.compile(r'"\$image":"([0-9a-f]{64})"')


def encode_json(value: object, refs: list[str]) -> str:
    """Compact JSON of a node value; image references become `{"$image": sha256, ...}`
    and their hashes are appended to `refs` (so the store can save the blobs with it)."""
    try:
        text = _encode(value)
    except (TypeError, ValueError, RecursionError):  # keys JSON cannot hold, cycles
        text = json.dumps(
            to_jsonable(value, None), default=repr, ensure_ascii=False, separators=(",", ":")
        )
    text = escape_surrogates(text)  # UTF-8 stores cannot hold them raw
    if '"$image"' in text:
        refs.extend(_IMAGE.findall(text))
    return text


def encode_node(
    node: Node,
    refs: list[str],
    input_json: str | None = None,
    reads_base: ReadsBase | None = None,
) -> NodeRow:
    """The row for `node` as it is now; `input_json` reuses an earlier encoding of its
    input; `reads_base` stores its `reads` as a slice of an earlier node's plus the rest
    (see reads_overlap)."""
    data: dict[str, Any] = {}
    if node.predecessor is not None:
        data["predecessor"] = node.predecessor
    if node.branch != "main":
        data["branch"] = node.branch
    if node.error is not None:
        data["error"] = node.error
    if node.expose != "io":
        data["expose"] = node.expose
    if node.render_range is not None:
        data["render_range"] = node.render_range.as_dict()
    if node.hidden_inputs:
        data["hidden_inputs"] = node.hidden_inputs
    if node.system is not None:
        data["system"] = node.system
    if reads_base is not None:
        data["reads_base"] = list(reads_base)
        data["reads"] = node.reads[reads_base[2] :]
    elif node.reads:
        data["reads"] = node.reads
    if node.messages_hash is not None:
        data["messages_hash"] = node.messages_hash
    if node.usage is not None:
        data["usage"] = node.usage.model_dump(exclude_defaults=True)
    if node.meta:
        data["meta"] = node.meta
    if input_json is None and node.input is not None:
        input_json = encode_json(node.input, refs)
    return NodeRow(
        node.seq,
        node.id,
        node.kind,
        node.name,
        node.parent,
        node.status,
        node.started_at,
        node.ended_at,
        node.end_seq,
        input_json,
        None if node.output is None else encode_json(node.output, refs),
        encode_json(data, refs) if data else None,
    )


def decode_node(row: NodeRow, session: str | None = None) -> Node:
    """The Node a row holds (images as ImageRef). Raises StoreDamaged naming the row
    when it is not a node, StoreError on one whose reads refer to another row (use
    decode_rows)."""
    node, base = _decode(row, session)
    if base is not None:
        raise StoreError(f"node {row.id!r} stores its reads relative to {base[0]!r}")
    return node


def decode_after(row: NodeRow, earlier: Mapping[str, Node], session: str | None = None) -> Node:
    """The Node a row holds, its reads stored relative to another row rebuilt from
    `earlier` (the nodes decoded before it, by id): a node followed as it is recorded
    (store/events.py). A base not in `earlier` leaves `meta["reads_incomplete"] = True`."""
    node, base = _decode(row, session)
    if base is not None:
        base_id, start, count = base
        base_node = earlier.get(base_id)
        if base_node is None or base_node.meta.get("reads_incomplete"):
            node.meta["reads_incomplete"] = True
        else:
            node.reads = [*base_node.reads[start : start + count], *node.reads]
    return node


def decode_rows(rows: Iterable[NodeRow], session: str | None = None) -> list[Node]:
    """The Nodes of one session's rows, with reads stored relative to another row rebuilt.

    A reads base missing from `rows` (a damaged store) leaves that node with the reads it
    stored itself and `meta["reads_incomplete"] = True`; nothing else is affected. A row
    that is not a node raises StoreDamaged naming it (in session `session`).
    """
    nodes: dict[str, Node] = {}
    pending: dict[str, ReadsBase] = {}
    for row in rows:
        node, base = _decode(row, session)
        nodes[node.id] = node
        if base is not None:
            pending[node.id] = base
    done: set[str] = set()
    for node_id in pending:
        chain: list[str] = []  # this node and the unresolved bases below it
        current = node_id
        while current in pending and current not in done and current not in chain:
            chain.append(current)
            current = pending[current][0]
        for unresolved in reversed(chain):
            base_id, start, count = pending[unresolved]
            base_node = nodes.get(base_id)
            node = nodes[unresolved]
            if (
                base_node is None
                or (base_id in pending and base_id not in done)
                or base_node.meta.get("reads_incomplete")
            ):
                node.meta["reads_incomplete"] = True  # a damaged store: keep what is there
            else:
                node.reads = [*base_node.reads[start : start + count], *node.reads]
            done.add(unresolved)
    return list(nodes.values())


def _decode(row: NodeRow, session: str | None) -> tuple[Node, ReadsBase | None]:
    try:
        return _decode_row(row)
    except Exception as exc:  # anything a damaged row can raise: it is not a node
        where = "" if session is None else f" of session {session!r}"
        raise StoreDamaged(
            f"the row of node {row.id!r} (seq {row.seq!r}){where} cannot be read: "
            f"{_reason(exc)}. It was damaged or written by something other than "
            "openprogram. `openprogram sessions check` lists every such row; restore the "
            "store from a backup, or fork the session before that node to go on"
        ) from exc


def _reason(exc: Exception) -> str:
    """What was wrong with a stored value, in one line."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{where}: {first['msg']} (found {first.get('input')!r:.80})"
    if isinstance(exc, _BadColumn):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


class _BadColumn(ValueError):
    """A column of a row that does not hold what the format says."""


def _column(text: str | None, name: str) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError) as exc:
        raise _BadColumn(f"its {name} column is not valid JSON ({exc}): {text!r:.80}") from exc


def _decode_row(row: NodeRow) -> tuple[Node, ReadsBase | None]:
    data = _column(row.data, "data") or {}
    if not isinstance(data, dict):
        raise _BadColumn(f"its data column holds a JSON {type(data).__name__}, not an object")
    base = data.pop("reads_base", None)
    data.update(
        id=row.id,
        seq=row.seq,
        kind=row.kind,
        name=row.name,
        parent=row.parent,
        status=_status(row.status, data),
        started_at=row.started_at,
        ended_at=row.ended_at,
        end_seq=row.end_seq,
    )
    node = Node.model_validate(data)
    node.input = from_jsonable(_column(row.input, "input"))
    node.output = from_jsonable(_column(row.output, "output"))
    return node, None if base is None else (str(base[0]), int(base[1]), int(base[2]))


_OLD_STOP = re.compile(r"(RunStopped|BudgetExceeded): ")


def _status(status: str, data: dict[str, Any]) -> str:
    """The row's status. A stop written before the `stopped` status existed (`error`,
    with `meta["stop_reason"]` and a RunStopped error) reads as `stopped`."""
    if status == "error" and _OLD_STOP.match(str(data.get("error") or "")):
        meta = data.get("meta")
        if isinstance(meta, dict) and "stop_reason" in meta:
            return "stopped"
    return status


def reads_overlap(base: Sequence[str], reads: Sequence[str]) -> tuple[int, int] | None:
    """(start, count) when `reads` begins with base[start:start+count] for a count worth
    referring to (an llm call in a loop reads what the previous one read, plus a little:
    storing only the difference keeps a long run's storage linear), else None."""
    if len(reads) < _MIN_SHARED_READS:
        return None
    try:
        start = base.index(reads[0])
    except ValueError:
        return None
    limit = min(len(base) - start, len(reads))
    if base[start : start + limit] == reads[:limit]:  # the usual case, compared in C
        return (start, limit) if limit >= _MIN_SHARED_READS else None
    count = 0
    while count < limit and base[start + count] == reads[count]:
        count += 1
    return (start, count) if count >= _MIN_SHARED_READS else None


_MIN_SHARED_READS = 4


def image_refs(value: object, into: set[str]) -> None:
    """Add the sha256 of every ImageRef inside a decoded value to `into`."""
    if isinstance(value, ImageRef):
        into.add(value.sha256)
    elif isinstance(value, dict):
        for item in value.values():
            image_refs(item, into)
    elif isinstance(value, list):
        for item in value:
            image_refs(item, into)
