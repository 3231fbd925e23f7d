"""Datasets of cases: Case, a dataset's data and files, and cases made from recorded calls.

Owns what a case is (inputs, the expected output, metadata), DatasetData (a named list
of cases, the public Dataset's data), reading and writing datasets as YAML, JSON or
JSONL, and from_sessions. Data only: running a dataset is _evaluating.py's, and the
public Dataset (evaluation.py) adds `evaluate`. Start at Case.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from openprogram.core.dag import Node
from openprogram.echo import echo
from openprogram.errors import StoreError, UsageError

__all__ = [
    "Case",
    "DatasetData",
    "case_label",
    "dataset_reader",
    "first_problem",
    "read_by",
    "read_text",
]

log = logging.getLogger("openprogram.evals")

LABEL_LIMIT = 60
"""Characters of a case's inputs its label (and a name made from it) keeps."""


def case_label(inputs: object, limit: int = LABEL_LIMIT) -> str:
    """A short line saying what a case asks: a text input itself (the user's text); of
    a dict, its longest text of several words (a message, a ticket), else its one text,
    else `key=value` pairs; anything else as compact JSON. Whitespace is folded, the
    line cut to `limit` characters."""
    if isinstance(inputs, Mapping):
        texts = [v for v in inputs.values() if isinstance(v, str) and v.strip()]
        worded = [t for t in texts if len(t.split()) > 1]
        if worded or len(texts) == 1:
            text = max(worded or texts, key=len)
        else:
            text = ", ".join(
                f"{k}={v if isinstance(v, str) else _compact(v)}" for k, v in inputs.items()
            )
    elif isinstance(inputs, str):
        text = inputs
    else:
        text = _compact(inputs)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _compact(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str, separators=(",", ":"))[:1000]
    except (ValueError, RecursionError):
        return type(value).__name__


_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")


class Case(BaseModel):
    """One example to run: the function's inputs and what it should give.

    inputs: a dict is passed as keyword arguments (a recorded call's bound arguments are
        one); anything else as the one positional argument.
    expected: the reference output scorers such as `equals` compare with (None: none).
    metadata: anything to keep with the case (tags, where it came from).
    name: the case's name, unique in its dataset; pairs cases when two reports are
        compared (default: "case-{n}", its 1-based place in the dataset).
    turns: a conversation instead of one call: each turn (a user message; a dict is
        passed as keyword arguments) is one call of the function, all in the run's one
        session, so each sees the turns before it. The run's output is the list of the
        replies, scored on the whole conversation. Give `turns` or `inputs`, not both.
    """

    model_config = ConfigDict(extra="forbid")

    inputs: Any = None
    expected: Any = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    name: str | None = None
    turns: list[Any] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Case:
        if self.turns is not None and self.inputs is not None:
            raise ValueError("a case has inputs (one call) or turns (a conversation), not both")
        if self.turns is not None and not self.turns:
            raise ValueError("turns is an empty conversation; give at least one turn")
        return self

    @property
    def label(self) -> str:
        """The case's inputs as a short line (its first turn's, for a conversation)."""
        return case_label(self.turns[0] if self.turns else self.inputs)

    def arguments(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The positional and keyword arguments the function is called with."""
        if isinstance(self.inputs, Mapping):
            return (), dict(self.inputs)
        if self.inputs is None:
            return (), {}
        return (self.inputs,), {}


_D = TypeVar("_D", bound="DatasetData")


class DatasetData(BaseModel):
    """A named list of cases, and its files: the data of the public Dataset.

    Cases without a name are named "case-{n}" by their place; two cases with one name
    raise UsageError (a comparison pairs cases by name).
    """

    model_config = ConfigDict(extra="forbid")

    name: str = "dataset"
    cases: list[Case] = Field(default_factory=list)

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        self._name_cases()

    def _name_cases(self) -> None:
        seen: set[str] = set()
        for number, case in enumerate(self.cases, 1):
            if case.name is None:
                case.name = f"case-{number}"
            if case.name in seen:
                raise UsageError(
                    f"two cases are named {case.name!r} in dataset {self.name!r}; case names "
                    "must be unique (reports are compared case by case)"
                )
            seen.add(case.name)

    def __len__(self) -> int:
        return len(self.cases)

    def __getitem__(self, name: str) -> Case:
        for case in self.cases:
            if case.name == name:
                return case
        raise KeyError(name)

    # -- files ---------------------------------------------------------------------------
    @classmethod
    def load(cls: type[_D], path: str | os.PathLike[str]) -> _D:
        """Read a dataset file: .yaml/.yml or .json (`{name, cases: [...]}`, or a bare list
        of cases) or .jsonl (one case a line; the name is the file's stem).

        Raises UsageError naming the file (and line) when it is missing or malformed.
        """
        target = Path(path).expanduser()
        suffix = _suffix(target)
        text = read_text(target)
        data: Any
        if suffix == ".jsonl":
            cases = []
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        cases.append(json.loads(line))
                    except json.JSONDecodeError as exc:
                        raise UsageError(f"{target}:{number}: not JSON: {exc}") from exc
                    except RecursionError:
                        raise UsageError(f"{target}:{number}: nests too deeply") from None
            data = {"name": target.stem, "cases": cases}
        elif suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{target}: not JSON: {exc}") from exc
            except RecursionError:
                raise UsageError(f"{target}: nests too deeply") from None
        else:
            data = _yaml_load(target, text)
        if isinstance(data, list):
            data = {"name": target.stem, "cases": data}
        if not isinstance(data, dict):
            raise UsageError(
                f"{target}: a dataset is a mapping {{name, cases: [...]}} or a list of "
                f"cases, not {type(data).__name__}"
            )
        data.setdefault("name", target.stem)
        try:
            dataset = cls.model_validate(data)
        except ValidationError as exc:
            raise UsageError(f"{target}: not a dataset: {first_problem(exc)}") from None
        cls._name_cases(dataset)  # model_validate skips __init__
        return dataset

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the dataset to `path`, in the format its suffix names (.yaml, .yml, .json,
        .jsonl; JSONL keeps the cases only). Values that are not JSON are written by
        their str(). Returns the path."""
        target = Path(path).expanduser()
        suffix = _suffix(target)
        data = json.loads(self.model_dump_json(exclude_none=False))
        if suffix == ".jsonl":
            text = "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in data["cases"])
        elif suffix == ".json":
            text = json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        else:
            import yaml

            text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
        target.write_text(text, encoding="utf-8")
        return target

    # -- from recordings -----------------------------------------------------------------
    @classmethod
    def from_sessions(
        cls: type[_D],
        store: object,
        function: str,
        *,
        where: Callable[[Node], bool] | None = None,
        sessions: Sequence[str] | None = None,
        unique: bool = True,
        limit: int | None = None,
        name: str | None = None,
    ) -> _D:
        """Cases from recorded calls: every completed call of `function` in `store`'s
        sessions (at any depth), its recorded input as the case's inputs and its
        recorded output as `expected`. Each case is named from its inputs (case_label:
        the user's text, shortened; " (2)" and on when two read alike).

        where: keep only calls for which `where(node)` is true (node: the call's code
            node). sessions: only these session ids (default: all but eval runs, whose
            ids start with "eval-"). unique: skip a call whose input an earlier case
            has. limit: at most this many cases. Each case's metadata names the
            `session` and `node` it came from. Raises UsageError when no call matched.

        The store notes the dataset (as "dataset:NAME") as a reader of those sessions,
        so `sessions prune` keeps them; `release(store)` (or `openprogram sessions
        unread dataset:NAME`) lets them go.
        """
        from openprogram.session._loading import load_dag
        from openprogram.store.open import open_store

        resolved, owns = open_store(store)
        if resolved is None:
            raise UsageError(
                f"Dataset.from_sessions({store!r}, ...) needs a store with recorded "
                "sessions: a file path, 'sqlite:///...', 'postgresql://...' or a Store"
            )
        cases: list[Case] = []
        seen: set[str] = set()
        labels: set[str] = set()
        try:
            infos = resolved.list_sessions()
            wanted = None if sessions is None else set(sessions)
            for info in infos:
                if wanted is not None and info.id not in wanted:
                    continue
                if wanted is None and info.id.startswith("eval-"):
                    continue
                dag = load_dag(resolved, info)
                calls = dag.find(name=function, kind="code")
                for node in calls:
                    if node.status != "completed" or (where is not None and not where(node)):
                        continue
                    key = json.dumps(node.input, sort_keys=True, default=str)
                    if unique and key in seen:
                        continue
                    seen.add(key)
                    where_from = f"{info.id}#{dag.ordinal(node)}" if len(calls) > 1 else info.id
                    label = name_made = case_label(node.input) or where_from
                    count = 1
                    while name_made in labels:
                        count += 1
                        name_made = f"{label} ({count})"
                    labels.add(name_made)
                    cases.append(
                        Case(
                            inputs=node.input,
                            expected=node.output,
                            metadata={"session": info.id, "node": node.id, "call": where_from},
                            name=name_made,
                        )
                    )
                    if limit is not None and len(cases) >= limit:
                        break
                if limit is not None and len(cases) >= limit:
                    break
            read_by(
                resolved,
                {str(c.metadata["session"]) for c in cases},
                dataset_reader(name or function),
            )
        finally:
            if owns:
                resolved.close()
        if not cases:
            raise UsageError(
                f"no completed call of {function!r} in {resolved.url}"
                + ("" if where is None else " matched `where`")
                + "; check the function's name (`openprogram sessions show ID` lists calls)"
            )
        return cls(name=name or function, cases=cases)

    def release(self, store: object) -> int:
        """Let go of the sessions of `store` this dataset was made from (from_sessions
        noted "dataset:NAME" as their reader): `sessions prune` may remove them once
        nothing else reads them. Returns how many it let go; raises StoreError or
        UsageError when the store cannot be opened or written."""
        from openprogram.store.open import open_store

        resolved, owns = open_store(store)
        unread = getattr(resolved, "unread", None)
        try:
            return int(unread(dataset_reader(self.name))) if callable(unread) else 0
        finally:
            if owns and resolved is not None:
                resolved.close()


def dataset_reader(name: str) -> str:
    """The reader name a dataset called `name` keeps its sessions by: "dataset:NAME"."""
    return f"dataset:{name}"


def read_by(store: object, sessions: set[str], reader: str) -> None:
    """Note `reader` as a reader of `sessions`, where the store keeps readers
    (store/_readers.py: prune keeps those sessions); a store that cannot take the note
    (read-only, unreachable) is said so in the log, what was made kept all the same."""
    note = getattr(store, "read_by", None)
    if not sessions or not callable(note):
        return
    try:
        note(sessions, reader)
    except StoreError as exc:
        log.warning("openprogram: %s: its sessions could not be kept from prune: %s", reader, exc)


def _suffix(path: Path) -> str:
    suffix = path.suffix.lower()
    if suffix not in _SUFFIXES:
        raise UsageError(
            f"dataset file {str(path)!r}: name it .yaml, .yml, .json or .jsonl "
            "(the suffix says the format)"
        )
    return suffix


MAX_FILE_BYTES = 512 * 1024 * 1024
"""The largest dataset file read (a bigger one is refused before it is read)."""


def read_text(target: Path, what: str = "dataset") -> str:
    """The file's text: a regular file (never a FIFO or a device, which would block or
    never end) of at most MAX_FILE_BYTES, in UTF-8; UsageError naming it (as `what`:
    a dataset, a report) otherwise."""
    try:
        descriptor = os.open(target, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise UsageError(f"no {what} file {str(target)!r}") from None
    except OSError as exc:
        raise UsageError(f"cannot read {what} {str(target)!r}: {exc.strerror}") from exc
    with os.fdopen(descriptor, "rb") as file:
        facts = os.fstat(file.fileno())
        if not stat.S_ISREG(facts.st_mode):
            raise UsageError(f"{what} {str(target)!r} is not a regular file")
        if facts.st_size > MAX_FILE_BYTES:
            raise UsageError(
                f"{what} {str(target)!r} holds {facts.st_size:,} bytes, over the "
                f"{MAX_FILE_BYTES:,} a {what} file may have; split it"
            )
        raw = file.read(MAX_FILE_BYTES + 1)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"cannot read {what} {str(target)!r}: not UTF-8 ({exc.reason})") from exc


MAX_ALIAS_NODES = 1_000_000
"""How many values YAML aliases (`*name`) may add to a dataset once expanded: a 500-byte
file of nested aliases ("billion laughs") would otherwise stand for 10^9 values."""


def _yaml_load(path: Path, text: str) -> Any:
    """The YAML document's value, its aliases' expanded size checked before any value is
    built (UsageError for more than MAX_ALIAS_NODES added, or an alias inside itself)."""
    import yaml

    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_aliases(path, node)
        return loader.construct_document(node)
    except yaml.YAMLError as exc:
        raise UsageError(f"{path}: not YAML: {exc}") from exc
    except RecursionError:
        raise UsageError(f"{path}: nests too deeply") from None
    finally:
        loader.dispose()


def _check_aliases(path: Path, root: Any) -> None:
    """UsageError when the node graph, its aliases expanded, is over MAX_ALIAS_NODES
    nodes larger than it is, or holds a cycle. Each node is visited once."""
    import yaml

    def children(node: Any) -> list[Any]:
        if isinstance(node, yaml.MappingNode):
            return [part for pair in node.value for part in pair]
        if isinstance(node, yaml.SequenceNode):
            return list(node.value)
        return []

    sizes: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(child)] for child in children(node))
            if sizes[key] - len(sizes) > MAX_ALIAS_NODES:
                raise UsageError(
                    f"{path}: its aliases (*name) expand it by over {MAX_ALIAS_NODES:,} "
                    "values; write the values out, or use fewer nested aliases"
                )
            continue
        if key in sizes:
            continue
        if key in active:
            raise UsageError(f"{path}: an alias (*name) refers to the value it is inside")
        active.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in children(node) if id(child) not in sizes)


def first_problem(exc: ValidationError) -> str:
    """The first problem pydantic found, as one line naming where (for UsageError)."""
    error = exc.errors()[0]
    where = ".".join(str(p) for p in error["loc"]) or "(top)"
    return f"{where}: {error['msg']} (got {echo(error.get('input'), 80)})"
