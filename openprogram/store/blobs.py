"""StoredBlobs: the blob table of a reopened session, read from its store on demand.

A reopened GUI run may reference hundreds of screenshots; decoding them all at load
would cost seconds and gigabytes. StoredBlobs is the dict `ContextDAG.blobs` expects,
but an image recorded in the store is fetched and decoded only when first looked up.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar, overload

from openprogram.core.image import Image

__all__ = ["StoredBlobs"]

T = TypeVar("T")


class StoredBlobs(dict[str, Image]):
    """sha256 -> Image, where the hashes in `stored` are fetched with `fetch` (PNG bytes,
    or an Image held elsewhere) when first used."""

    def __init__(self, fetch: Callable[[str], bytes | Image | None], stored: Iterable[str]) -> None:
        super().__init__()
        self._fetch = fetch
        self._stored = set(stored)
        self._lock = threading.Lock()

    @property
    def stored(self) -> set[str]:
        """The hashes known to be in the store (loaded or not)."""
        return self._stored

    def _load(self, sha: str) -> Image | None:
        if sha not in self._stored:
            return None
        with self._lock:
            if dict.__contains__(self, sha):
                return dict.__getitem__(self, sha)
            data = self._fetch(sha)
            if data is None:
                return None
            image = Image.recorded(data, sha)  # under its hash of pixels, not PNG bytes
            dict.__setitem__(self, sha, image)
            return image

    def __getitem__(self, sha: str) -> Image:
        try:
            return dict.__getitem__(self, sha)
        except KeyError:
            image = self._load(sha)
            if image is None:
                raise
            return image

    @overload
    def get(self, sha: str, default: None = None) -> Image | None: ...
    @overload
    def get(self, sha: str, default: Image) -> Image: ...
    @overload
    def get(self, sha: str, default: T) -> Image | T: ...
    def get(self, sha: str, default: object = None) -> object:
        try:
            return self[sha]
        except KeyError:
            return default

    def setdefault(self, sha: str, value: Image) -> Image:
        found = dict.get(self, sha)
        if found is not None:
            return found
        dict.__setitem__(self, sha, value)  # same hash, same pixels: no need to fetch
        return value

    def __contains__(self, sha: object) -> bool:
        return dict.__contains__(self, sha) or sha in self._stored

    def keys(self) -> Any:
        return list(self)

    def __iter__(self) -> Iterator[str]:
        seen = set(dict.keys(self))
        yield from list(seen)
        yield from (sha for sha in list(self._stored) if sha not in seen)

    def __len__(self) -> int:
        return len(set(dict.keys(self)) | self._stored)

    def items(self) -> Any:
        return [(sha, image) for sha in self if (image := self.get(sha)) is not None]

    def values(self) -> Any:
        return [image for _, image in self.items()]

    def __repr__(self) -> str:
        return f"StoredBlobs(loaded={dict.__len__(self)}, stored={len(self._stored)})"
