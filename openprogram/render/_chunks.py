"""Chunks: a list that grows at the end and is cut and shared in O(length / 32).

A render's history keeps its lines, nodes and checkpoints in these, so the next render
takes all but the last few without visiting every item (touching a thousand scattered
objects costs more than the rest of a step). Full chunks are tuples, shared between cuts.
An llm node's `reads` is a plain list (`tolist()`), not a view of these: DESIGN §2.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_SIZE = 32


class Chunks(Generic[T]):
    """An append-only sequence; `prefix(n)` shares the full chunks below n."""

    __slots__ = ("_full", "_tail")

    def __init__(self, full: list[tuple[T, ...]] | None = None, tail: list[T] | None = None):
        self._full: list[tuple[T, ...]] = full if full is not None else []
        self._tail: list[T] = tail if tail is not None else []

    def __len__(self) -> int:
        return len(self._full) * _SIZE + len(self._tail)

    def __getitem__(self, index: int) -> T:
        if index < 0:
            index += len(self)
        chunk, offset = divmod(index, _SIZE)
        if chunk < len(self._full):
            return self._full[chunk][offset]
        return self._tail[offset]

    def __iter__(self) -> Iterator[T]:
        for chunk in self._full:
            yield from chunk
        yield from self._tail

    def since(self, start: int) -> Iterator[T]:
        """The items from index `start` on."""
        chunk, offset = divmod(start, _SIZE)
        for index in range(chunk, len(self._full)):
            yield from self._full[index][offset:]
            offset = 0
        yield from self._tail[offset:] if chunk >= len(self._full) else self._tail

    def prefix(self, count: int) -> Chunks[T]:
        """The first `count` items, as a new Chunks that can grow on its own."""
        chunk, offset = divmod(count, _SIZE)
        if chunk < len(self._full):
            return Chunks(self._full[:chunk], list(self._full[chunk][:offset]))
        return Chunks(list(self._full), self._tail[:offset])

    def append(self, item: T) -> None:
        self._tail.append(item)
        if len(self._tail) == _SIZE:
            self._full.append(tuple(self._tail))
            self._tail = []

    def extend(self, items: Iterable[T]) -> None:
        values = items if isinstance(items, list) else list(items)
        tail = self._tail
        room = _SIZE - len(tail)
        if len(values) < room:
            tail.extend(values)
            return
        tail.extend(values[:room])
        self._full.append(tuple(tail))
        rest = values[room:]
        whole = len(rest) - len(rest) % _SIZE
        self._full.extend(tuple(rest[i : i + _SIZE]) for i in range(0, whole, _SIZE))
        self._tail = rest[whole:]

    def tolist(self) -> list[T]:
        items: list[T] = []
        for chunk in self._full:
            items.extend(chunk)
        items.extend(self._tail)
        return items

    def bisect(self, value: object, key: Callable[[T], Any], *, right: bool = False) -> int:
        """Where `value` goes among the items, ordered by `key` (bisect_left or _right)."""
        full = self._full
        low, high = 0, len(full)
        while low < high:  # the first full chunk whose last item lies beyond value
            middle = (low + high) // 2
            last = key(full[middle][-1])
            if last < value or (right and last == value):
                low = middle + 1
            else:
                high = middle
        items = full[low] if low < len(full) else self._tail
        start, end = 0, len(items)
        while start < end:
            middle = (start + end) // 2
            item = key(items[middle])
            if item < value or (right and item == value):
                start = middle + 1
            else:
                end = middle
        return low * _SIZE + start
