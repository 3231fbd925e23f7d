"""Per-app component memory: template crops plus a JSON index under the user data dir.

Owns remembering what a component is called (remember), finding remembered components
on a new screenshot with multi-scale template matching (match, label) and pruning
(forget). Files: <data dir>/components/<app-slug>/index.json and crops/<id>.png.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from PIL import Image

from gui_harness.perception._pixels import ImageLike, clip_box, grey_array, rgb_array
from gui_harness.perception.component import KINDS, Component, Kind, reading_order
from gui_harness.perception.memory import _match
from openprogram.echo import echo
from openprogram.errors import UsageError

__all__ = ["FORMAT_VERSION", "SCALES", "ComponentMemory", "MemoryEntry", "default_data_dir"]

SCALES = _match.SCALES

FORMAT_VERSION = 1
"""Version of index.json; an index of another version is moved aside, not read."""

logger = logging.getLogger(__name__)

_CONTEXT = 3  # px of surroundings kept around each crop: its edges help matching
_CROP_NAME = re.compile(r"^[0-9a-f]{8,32}\.png$")


def default_data_dir() -> Path:
    """Where openprogram keeps user data: $OPENPROGRAM_DATA_DIR, else
    $XDG_DATA_HOME/openprogram, else ~/.local/share/openprogram."""
    if explicit := os.environ.get("OPENPROGRAM_DATA_DIR"):
        return Path(explicit).expanduser()
    if xdg := os.environ.get("XDG_DATA_HOME"):
        return Path(xdg).expanduser() / "openprogram"
    return Path.home() / ".local" / "share" / "openprogram"


@dataclass(frozen=True)
class MemoryEntry:
    """One remembered component: its label and kind, its size in pixels, the crop's file
    (the component plus a few pixels around it, `offset` being the component's top-left
    in it) and how often and when (unix seconds) it was last matched."""

    id: str
    label: str
    kind: Kind
    size: tuple[int, int]
    file: str
    offset: tuple[int, int] = (0, 0)
    pinned: bool = False
    hits: int = 0
    created: float = 0.0
    last_seen: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """The JSON-able form stored in index.json."""
        data = asdict(self)
        data["size"] = list(self.size)
        data["offset"] = list(self.offset)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MemoryEntry:
        """Parse an index entry; raises ValueError (or KeyError, TypeError) when malformed."""
        width, height = (int(v) for v in data["size"])
        left, top = (int(v) for v in data.get("offset", (0, 0)))
        entry = cls(
            id=str(data["id"]),
            label=str(data["label"]),
            kind=data["kind"],
            size=(width, height),
            file=str(data["file"]),
            offset=(left, top),
            pinned=bool(data.get("pinned", False)),
            hits=int(data.get("hits", 0)),
            created=float(data.get("created", 0.0)),
            last_seen=float(data.get("last_seen", 0.0)),
        )
        bad_geometry = min(entry.size) < 1 or min(entry.offset) < 0
        if entry.kind not in KINDS or not _CROP_NAME.match(entry.file) or bad_geometry:
            raise ValueError(f"malformed memory entry {echo(data)}")
        return entry


class ComponentMemory:
    """What the components of one app are called, learnt from labelled crops.

    Stored under ``<root>/components/<app-slug>/``; `root` defaults to
    default_data_dir(). Match statistics are written at most every `save_interval`
    seconds (flush() writes them now); remember() and forget() write at once. Safe to
    share between threads; between processes the last writer of the index wins.
    `clock` gives the time in unix seconds.
    """

    def __init__(
        self,
        app: str,
        root: Path | str | None = None,
        *,
        clock: Callable[[], float] = time.time,
        save_interval: float = 5.0,
    ) -> None:
        self.app = app
        base = (Path(root) if root is not None else default_data_dir()) / "components"
        self.directory = _inside(base, _slug(app))
        self._crops = self.directory / "crops"
        self._index = self.directory / "index.json"
        self._clock = clock
        self._save_interval = save_interval
        self._saved_at = clock()
        self._unsaved = False
        self._lock = threading.RLock()
        self._templates: dict[str, _match.Template | None] = {}
        self._entries: dict[str, MemoryEntry] = self._load()

    @property
    def entries(self) -> list[MemoryEntry]:
        """The remembered entries, oldest first."""
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def remember(
        self, image: ImageLike, component: Component, label: str, *, pinned: bool = False
    ) -> MemoryEntry:
        """Store the crop of `component` from `image` under `label`.

        A crop of the same label and kind and about the same size replaces the old one
        (its hits are kept). Pinned entries survive forget(). Raises UsageError for an
        empty label or a box outside the image.
        """
        if not isinstance(label, str) or not label.strip():
            raise UsageError(f"label={label!r} must be a non-empty string")
        pixels = rgb_array(image)
        box = clip_box(component.box, (pixels.shape[1], pixels.shape[0]))
        if box is None or min(box[2:]) < 4:
            raise UsageError(
                f"component box {component.box!r} is not inside the "
                f"{pixels.shape[1]}x{pixels.shape[0]} image (or is under 4 px)"
            )
        x, y, w, h = box
        around = (x - _CONTEXT, y - _CONTEXT, w + 2 * _CONTEXT, h + 2 * _CONTEXT)
        cx, cy, cw, ch = clip_box(around, (pixels.shape[1], pixels.shape[0])) or box
        crop = np.ascontiguousarray(pixels[cy : cy + ch, cx : cx + cw])
        offset = (x - cx, y - cy)
        now = self._clock()
        with self._lock:
            old = next(
                (
                    e
                    for e in self._entries.values()
                    if e.label == label
                    and e.kind == component.kind
                    and abs(e.size[0] - w) <= 2
                    and abs(e.size[1] - h) <= 2
                ),
                None,
            )
            if old is not None:
                entry = replace(
                    old, size=(w, h), offset=offset, pinned=old.pinned or pinned, last_seen=now
                )
            else:
                ident = secrets.token_hex(8)
                entry = MemoryEntry(
                    ident,
                    label,
                    component.kind,
                    (w, h),
                    f"{ident}.png",
                    offset,
                    pinned,
                    created=now,
                    last_seen=now,
                )
            buffer = io.BytesIO()
            Image.fromarray(crop).save(buffer, format="PNG")
            self._crops.mkdir(parents=True, exist_ok=True)
            _atomic_write(self._crops / entry.file, buffer.getvalue(), durable=True)
            self._entries[entry.id] = entry
            grey = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY)
            self._templates[entry.id] = _match.Template.of(entry.id, grey, offset, (w, h))
            self._save(durable=True)
            return entry

    def match(
        self,
        image: ImageLike,
        components: Sequence[Component] | None = None,
        *,
        threshold: float = 0.85,
    ) -> list[tuple[Component, float]]:
        """Find remembered components on `image`; each hit comes back labelled, with its
        score (normalised cross-correlation, up to 1).

        With `components`, only those are tried (each gets its best entry) and they keep
        their index and box. Without, every entry is searched for over the whole image at
        scales 0.8–1.25 (much slower) and each found one gets a fresh box, numbered in
        reading order. Matched entries count a hit and update last_seen.
        """
        hits = self._hits(image, components, threshold)
        if components is None:  # found components carry their score as confidence
            ordered = reading_order([c.with_label(e.label) for _, c, e, _ in hits])
            return [(c, c.confidence) for c in ordered]
        return [(c.with_label(e.label), score) for _, c, e, score in hits]

    def label(
        self, image: ImageLike, components: Sequence[Component], *, threshold: float = 0.85
    ) -> list[Component]:
        """`components` with the label of every one memory recognises (others unchanged)."""
        labelled = list(components)
        for position, component, entry, _ in self._hits(image, labelled, threshold):
            labelled[position] = component.with_label(entry.label)
        return labelled

    def flush(self) -> None:
        """Write match statistics (hits, last_seen) not yet written to the index."""
        with self._lock:
            if self._unsaved:
                self._save(durable=True)

    def forget(
        self, *, max_entries: int | None = None, older_than: float | timedelta | None = None
    ) -> list[MemoryEntry]:
        """Remove unpinned entries not seen for `older_than` (seconds or a timedelta), then
        the least recently seen unpinned ones until at most `max_entries` are left.

        Pinned entries are never removed (so more than `max_entries` may remain). Returns
        the removed entries.
        """
        if max_entries is not None and max_entries < 0:
            raise UsageError(f"max_entries={max_entries!r} must be 0 or more")
        if isinstance(older_than, timedelta):
            older_than = older_than.total_seconds()
        with self._lock:
            unpinned = sorted(
                (e for e in self._entries.values() if not e.pinned), key=lambda e: e.last_seen
            )
            doomed: list[MemoryEntry] = []
            if older_than is not None:
                cutoff = self._clock() - older_than
                doomed = [e for e in unpinned if e.last_seen < cutoff]
            if max_entries is not None:
                excess = len(self._entries) - len(doomed) - max_entries
                rest = [e for e in unpinned if e not in doomed]
                doomed += rest[: max(0, excess)]
            for entry in doomed:
                del self._entries[entry.id]
                self._templates.pop(entry.id, None)
            if doomed:
                self._save(durable=True)
                for entry in doomed:
                    with contextlib.suppress(FileNotFoundError):
                        (self._crops / entry.file).unlink()
            return doomed

    # -- matching ---------------------------------------------------------------------

    def _hits(
        self, image: ImageLike, components: Sequence[Component] | None, threshold: float
    ) -> list[tuple[int, Component, MemoryEntry, float]]:
        grey = grey_array(image)
        with self._lock:
            templates = [t for e in self._entries.values() if (t := self._template(e))]
            hits: list[tuple[int, Component, MemoryEntry, float]] = []
            if components is None:
                for box, key, score in _match.search(grey, templates, threshold):
                    entry = self._entries[key]
                    found = Component(0, entry.kind, box, None, score)
                    hits.append((len(hits), found, entry, score))
            else:
                boxes = [c.box for c in components]
                for i, key, score in _match.check(grey, boxes, templates, threshold):
                    hits.append((i, components[i], self._entries[key], score))
            if hits:
                now = self._clock()
                for key in {entry.id for _, _, entry, _ in hits}:
                    current = self._entries[key]
                    self._entries[key] = replace(current, hits=current.hits + 1, last_seen=now)
                self._unsaved = True
                if now - self._saved_at >= self._save_interval:
                    self._save(durable=False)
        return hits

    def _template(self, entry: MemoryEntry) -> _match.Template | None:
        if entry.id not in self._templates:
            pixels = cv2.imread(str(self._crops / entry.file), cv2.IMREAD_GRAYSCALE)
            template = None
            if pixels is not None:
                template = _match.Template.of(entry.id, pixels, entry.offset, entry.size)
            self._templates[entry.id] = template
        return self._templates[entry.id]

    # -- storage ----------------------------------------------------------------------

    def _load(self) -> dict[str, MemoryEntry]:
        try:
            raw = self._index.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = json.loads(raw.decode("utf-8"))
            if not isinstance(data, dict) or data.get("version") != FORMAT_VERSION:
                raise ValueError(f"expected version {FORMAT_VERSION}")
            entries = [MemoryEntry.from_dict(item) for item in data["entries"]]
        except (ValueError, KeyError, TypeError) as exc:
            aside = self._index.with_name(f"index.json.corrupt-{int(self._clock() * 1000)}")
            os.replace(self._index, aside)
            logger.warning(
                "component memory index %s is unreadable (%s); moved it to %s and started empty",
                self._index,
                exc,
                aside.name,
            )
            return {}
        present = {}
        for entry in entries:
            if (self._crops / entry.file).is_file():
                present[entry.id] = entry
            else:
                logger.warning(
                    "component memory crop %s is missing; dropping %r", entry.file, entry.label
                )
        return present

    def _save(self, *, durable: bool) -> None:
        data = {
            "version": FORMAT_VERSION,
            "app": self.app,
            "entries": [e.to_dict() for e in self._entries.values()],
        }
        self.directory.mkdir(parents=True, exist_ok=True)
        payload = json.dumps(data, ensure_ascii=False, indent=1).encode("utf-8")
        _atomic_write(self._index, payload, durable=durable)
        self._saved_at = self._clock()
        self._unsaved = False


def _slug(app: str) -> str:
    if not isinstance(app, str) or any(sep in app for sep in ("/", "\\", "\0")):
        raise UsageError(f"app={app!r} must be an application name, not a path")
    slug = re.sub(r"[^a-z0-9._-]+", "-", app.strip().lower()).strip("-.")
    if not slug:
        raise UsageError(f"app={app!r} has no letters or digits to name a directory after")
    return slug


def _inside(base: Path, name: str) -> Path:
    path = (base / name).resolve()
    if path.parent != base.resolve():
        raise UsageError(f"app directory {path} would be outside {base}")
    return path


def _atomic_write(path: Path, data: bytes, *, durable: bool) -> None:
    """Write via a temp file in the same directory and os.replace, so readers see the
    old file or the new one, never half of one. `durable` also fsyncs the data."""
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            if durable:
                file.flush()
                os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
