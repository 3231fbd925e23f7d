"""OCR off the critical path: `OcrWorker` reads labels in a background thread.

Owns the engine choice (RapidOCR, whose ONNX models ship in its PyPI wheel; tesseract
when it is missing), the crop cache keyed by a hash of the crop's pixels, and the queue.
`label()` fills the labels already read and queues the rest, so a label appears on a
later observation of the same pixels; only when asked (`wait`, a new screen's first look)
does it wait, bounded, for its own crops, and while it waits a second thread reads too
(the caller is idle: both cores may work). The newest call's crops are read first (what
is on the screen now); RapidOCR reads each crop cut to its ink. Start at OcrWorker.label().
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import threading
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence
from typing import Any

import cv2
import numpy as np

from gui_harness.perception._pixels import ImageLike, clip_box, grey_array
from gui_harness.perception.component import Component
from gui_harness.perception.ocr import _grid_headers as headers
from gui_harness.perception.ocr._drawn import doubted, reconciled
from gui_harness.perception.ocr._lines import Lines, text_lines
from gui_harness.perception.ocr.ocr import read_text

__all__ = ["OcrWorker", "rapidocr_reader"]

logger = logging.getLogger(__name__)

Reader = Callable[[np.ndarray], str]
"""Reads the one line of text on a grey crop; "" when there is none."""

_READ_KINDS = frozenset({"button", "field", "text", "link", "tab", "dropdown"})
_INK = 24  # grey levels from a crop's background that make a column hold ink
_MARGIN = 4  # px of background kept (or added) either side of a crop's ink
_EDGE = 2  # px of background added above or below text cut by the crop's top or bottom
_GAP = 1.0  # a blank this many times a crop's height or longer is cut to that length
_CUT = 3  # rows of ink in a crop's side column that make text cut by the side
_MIN_RATIO = 3.0  # a shorter crop is padded to this width: a lone letter reads better
_UNDERLINE = 3  # rows of ink an underline is at most
_WIDE_LINE = 6  # a paragraph's lines are this many times as wide as high, or more
_PARAGRAPH = 3  # lines at one x, each right under the last: a paragraph, content
_LONG = 25  # a crop this many times as wide as high is a line of content, not a label
_GLYPH = 10  # px; a text blob no larger either way is one glyph: read, not waited for
_MIN_H = 8  # px; a lower crop holds no readable text (a slider's track, a thin bar)


def rapidocr_reader() -> Reader | None:
    """A reader backed by RapidOCR (recognition only: the crop is one line), or None
    when `rapidocr-onnxruntime` is not installed. Its models are loaded once per process
    (about 1 s) and shared by every reader.

    The crop, cut to its ink, is recognised at its own width (at least 3 times its
    height): RapidOCR's own call pads every line to 320 px at its 48 px height, so a
    short label cost a long line's work (the model takes any width: about half the time
    on a desktop's labels, and lone header letters read better cut to their ink)."""
    engine = _rapidocr_engine()
    if engine is None:
        return None
    recogniser: Any = getattr(engine, "text_rec", None)
    own_width = all(
        hasattr(recogniser, name) for name in ("resize_norm_img", "session", "postprocess_op")
    )

    def read(crop: np.ndarray) -> str:
        rgb = np.ascontiguousarray(np.repeat(_inked(crop)[:, :, None], 3, axis=2))
        if own_width:
            ratio = max(rgb.shape[1] / rgb.shape[0], _MIN_RATIO)
            batch = recogniser.resize_norm_img(rgb, ratio)[np.newaxis].astype(np.float32)
            found = recogniser.postprocess_op(
                recogniser.session(batch)[0], False, wh_ratio_list=[ratio], max_wh_ratio=ratio
            )
            return " ".join(str(text) for text, score in found if score >= 0.5).strip()
        result, _ = engine(rgb, use_det=False, use_cls=False, use_rec=True)
        return " ".join(str(text) for text, score in result or () if score >= 0.5).strip()

    return read


_engine_lock = threading.Lock()


def _rapidocr_engine() -> Any:
    with _engine_lock:  # two workers starting together load the models once
        return _load_rapidocr()


@functools.cache
def _load_rapidocr() -> Any:
    try:
        from rapidocr_onnxruntime import RapidOCR
    except ImportError:
        return None
    # one thread: OCR runs beside the agent's steps and must leave them a core
    return RapidOCR(intra_op_num_threads=1, inter_op_num_threads=1)


class OcrWorker:
    """Reads component labels in one background thread, cached by crop hash.

    `reader` reads a grey crop (default: RapidOCR when installed, else tesseract's
    read_text). The crops of the latest label() call are read first, in reading order,
    then those of older calls. Counters `hits`, `queued` and `reads` tell what each
    call did; use `wait_idle()` where a test or a script needs the queue drained.
    """

    def __init__(self, reader: Reader | None = None, *, cache_size: int = 4096) -> None:
        self._reader = reader
        self._reader_lock = threading.Lock()
        self._cache: OrderedDict[bytes, str] = OrderedDict()
        self._cache_size = cache_size
        self._pending: set[bytes] = set()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._work = threading.Condition(self._lock)
        # one batch of (key, crop) per label() call; the newest is read first
        self._batches: deque[deque[tuple[bytes, np.ndarray]]] = deque()
        self._closed = False
        self._waiting = 0  # label() calls waiting for their crops now
        self.hits = self.queued = self.reads = 0
        self._thread = threading.Thread(target=self._run, name="ocr-worker", daemon=True)
        self._thread.start()
        # reads only while a caller waits (a first look): it is idle then, and a core free
        self._helper = threading.Thread(
            target=self._run, args=(True,), name="ocr-worker-2", daemon=True
        )
        self._helper.start()

    def label(
        self, image: ImageLike, components: Sequence[Component], *, wait: float = 0.0
    ) -> list[Component]:
        """`components` with the labels OCR has already read for their crops; crops not
        read yet are queued. Labels already set are kept, but for tree names that may not be the
        text drawn (an identifier, a drop-down's name), which are read and checked
        against it (_drawn.py) without being waited for: the name stands until the read.
        With `wait` (seconds), the call waits up to that long for its own crops to be
        read (a new screen's first look) and fills what was read by then; by default it
        never waits. A crop is read
        line by line (_lines.py: a tile's name on two lines is one label, the lines
        joined by a space; a crop with no line of text, a slider's, is not read). It waits
        for labels, not content: ink over _LONG times as wide as its crop is high (a long
        line, a ruler), a paragraph's lines after its first, a crop of more lines than a
        label has and glyph-sized text blobs (an arrow, a bullet: _GLYPH) are read last
        and show on a later look. A grid found
        on pixels has its header cells read too, so its cells are named after them (a
        scrolled sheet's first row is not row 1: _grid_headers.py)."""
        grey = grey_array(image)
        labelled = list(components)
        batch: deque[tuple[bytes, np.ndarray]] = deque()
        waiting: dict[tuple[int, int], bytes] = {}  # (position, crop) -> key not read yet
        crops, content = _planned(grey, labelled)
        read: dict[tuple[int, int], str | None] = {}
        order = sorted(
            crops, key=lambda position: (labelled[position].kind != "grid", position in content)
        )
        for position in order:
            for number, crop in enumerate(crops[position]):
                key, text = self._lookup(crop, batch)
                if text is None and not self._closed and position not in content:
                    waiting[(position, number)] = key
                read[(position, number)] = text
        if batch:
            with self._work:
                self._batches.append(batch)
                self._work.notify_all()  # the helper may be the one to wake
        if wait > 0 and waiting:
            keys = set(waiting.values())
            with self._idle:
                self._waiting += 1
                self._work.notify_all()  # the helper starts reading
                try:
                    self._idle.wait_for(lambda: not (keys & self._pending), wait)
                finally:
                    self._waiting -= 1
                read.update({at: self._cache.get(key) for at, key in waiting.items()})
        for position, found in crops.items():
            texts = [read[(position, number)] for number in range(len(found))]
            component = labelled[position]
            if component.kind == "grid":
                labelled[position] = headers.named(component, texts)
            elif texts and all(text is not None for text in texts) and any(texts):
                text = " ".join(t for t in texts if t)
                if component.label is None:
                    labelled[position] = component.with_label(_unshortcut(text))
                else:  # a tree name checked against the text drawn (_drawn.py)
                    labelled[position] = reconciled(component, text)
        return labelled

    def _lookup(
        self, crop: np.ndarray, batch: deque[tuple[bytes, np.ndarray]]
    ) -> tuple[bytes, str | None]:
        """The crop's key and its text when read already; else None, and the crop
        queued in `batch` unless it is queued already."""
        key = hashlib.blake2b(crop.tobytes() + repr(crop.shape).encode(), digest_size=16).digest()
        with self._lock:
            text = self._cache.get(key)
            if text is not None:
                self._cache.move_to_end(key)
                self.hits += 1
            elif key not in self._pending and not self._closed:
                self._pending.add(key)
                self.queued += 1
                batch.append((key, crop.copy()))
        return key, text

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until every queued crop is read; False when `timeout` seconds pass first."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._pending, timeout)

    def close(self, *, wait: bool = True) -> None:
        """Stop the thread: crops queued and not yet read are dropped; the one being read
        is finished, and waited for unless `wait` is False. Safe to call twice."""
        with self._lock:
            self._closed = True
            for batch in self._batches:
                self._pending.difference_update(key for key, _ in batch)
            self._batches.clear()
            self._idle.notify_all()
            self._work.notify_all()
        if wait:
            self._thread.join()
            self._helper.join()

    def _run(self, helper: bool = False) -> None:
        # loaded before the first crop comes (RapidOCR's models: about 1 s), not after
        reader = None if helper else self._reader_once()
        while (item := self._next(helper)) is not None:
            key, crop = item
            if reader is None:
                reader = self._reader_once()
            try:
                text = reader(crop)
            except Exception:  # one bad crop must not end the worker
                logger.exception("OCR failed on a %s crop", crop.shape)
                text = ""
            with self._idle:
                self.reads += 1
                self._cache[key] = text
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
                self._pending.discard(key)
                self._idle.notify_all()

    def _reader_once(self) -> Reader:
        """The reader, chosen once for both threads (RapidOCR's session may be run from
        two threads at once); not under the queue's lock, as loading takes a while."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = rapidocr_reader() or read_text
            return self._reader

    def _next(self, helper: bool = False) -> tuple[bytes, np.ndarray] | None:
        """The next crop to read (the newest batch's first), waiting for one (the
        `helper` only while a caller waits); None once closed."""
        with self._work:
            if helper:
                self._work.wait_for(lambda: (self._batches and self._waiting) or self._closed)
            else:
                self._work.wait_for(lambda: self._batches or self._closed)
            if self._closed:
                return None
            batch = self._batches[-1]
            item = batch.popleft()
            if not batch:
                self._batches.pop()
            return item


def _planned(
    grey: np.ndarray, labelled: list[Component]
) -> tuple[dict[int, list[np.ndarray]], set[int]]:
    """What label() reads of `labelled` on `grey`: each position's crops (a grid's
    header cells; a component's lines), and the positions it does not wait for. Those
    are content (a long line, a paragraph's lines after its first, a crop of more lines
    than a label has, a glyph-sized blob), read last, and the tree names checked
    against the drawn text (_drawn.doubted): the tree's name stands until they are read."""
    crops: dict[int, list[np.ndarray]] = {}
    many: set[int] = set()  # crops of more lines than a label's: content
    checked: set[int] = set()
    for position, component in enumerate(labelled):
        if component.kind == "grid":
            crops[position] = headers.crops(grey, component)
        elif (component.label is None and component.kind in _READ_KINDS) or doubted(component):
            crop = _crop(grey, component)
            lines = text_lines(crop) if crop is not None else Lines()
            crops[position] = lines
            if lines.content:
                many.add(position)
            if component.label is not None:
                checked.add(position)
    # a grid's headers first: a few crops that name every cell of the sheet; content
    # last: a long line costs as much as a dozen labels; a glyph-sized blob as much
    # as a word, and it is a drawn mark (an arrow, a bullet), not a label
    content = (
        _paragraphs(labelled)
        | many
        | checked
        | {p for p in crops if _long(crops[p]) or _glyph(labelled[p])}
    )
    return crops, content


_SHORTCUT = re.compile(
    r"^(?P<name>.*?[^\s+-])\s*(?:(?:ctrl|control|alt|shift|meta|super)[-+])+\S{1,9}$"
    r"|^(?P<keyed>.*\S)\s+F(?:[1-9]|1[0-2])$",
    re.IGNORECASE,
)


def _unshortcut(text: str) -> str:
    """`text`, read off a menu item, less the keyboard shortcut drawn at its end
    ("Checkout...Ctrl-O", "Reload F5"): a menu toolkit without a tree (Tk) draws both
    in one row, which pixels find as one item; the user reads the name."""
    found = _SHORTCUT.match(text)
    if found is None:
        return text
    return found.group("name") or found.group("keyed")


def _crop(grey: np.ndarray, component: Component) -> np.ndarray | None:
    """Where `component`'s text is: around a box that hugs its text (a line of text, a
    link found on pixels: a small font's is under 12 px high, and an inset would cut
    its letters), inside the border of any other."""
    x, y, w, h = component.box
    if component.kind == "text" or (component.kind == "link" and component.source == "pixels"):
        box = (x - 3, y - 3, w + 6, h + 6)
    else:
        inset = 4 if min(w, h) > 20 else 2
        box = (x + inset, y + inset, w - 2 * inset, h - 2 * inset)
    clipped = clip_box(box, (grey.shape[1], grey.shape[0]))
    if clipped is None or clipped[2] < 4 or clipped[3] < _MIN_H:
        return None
    cx, cy, cw, ch = clipped
    crop = grey[cy : cy + ch, cx : cx + cw]
    return crop if float(crop.std()) >= 8 else None


def _paragraphs(components: Sequence[Component]) -> set[int]:
    """Positions of the text lines that continue a paragraph: _PARAGRAPH or more wide
    lines starting at one x, each under the last at a paragraph's line spacing (a
    list's or a menu's items stand further apart). Its first line names it; the rest is
    content."""
    lines = sorted(
        (c.box[1], c.box[0], c.box[3], position)
        for position, c in enumerate(components)
        if c.kind == "text" and c.label is None and c.box[2] >= _WIDE_LINE * c.box[3]
    )
    root: dict[int, int] = {}  # a line's position -> its paragraph's first line's
    for number, (y, x, h, position) in enumerate(lines):
        above = [
            other
            for oy, ox, oh, other in lines[:number]
            if abs(x - ox) <= 3 and 0 <= y - (oy + oh) <= 0.6 * h
        ]
        root[position] = root[above[-1]] if above else position
    sizes: dict[int, int] = {}
    for first in root.values():
        sizes[first] = sizes.get(first, 0) + 1
    return {p for p, first in root.items() if p != first and sizes[first] >= _PARAGRAPH}


def _glyph(component: Component) -> bool:
    """Whether `component` is a text blob no larger than one small glyph either way."""
    return component.kind == "text" and max(component.box[2], component.box[3]) <= _GLYPH


def _long(crops: list[np.ndarray]) -> bool:
    """Whether the crops hold a long line of ink: content (a paragraph's line, a
    ruler), not a label (a title bar's crop is long, its title is not)."""
    return any(_inked(crop).shape[1] > _LONG * crop.shape[0] for crop in crops)


def _inked(crop: np.ndarray) -> np.ndarray:
    """Only the columns of `crop` with ink, and a margin: the recogniser's work grows
    with the width (a field's or a wide button's crop is mostly empty, and a blank
    wider than the crop is high is cut to that: a drop-down's text and its arrow are
    one read, not a read of the room between them). Where text runs
    into a side of the crop (a box that hugs its text, cut into by the inset: a focus
    ring's, a slim drop-down's), a margin is added: read touching the sides, "Email
    alerts" came out "Emailalerts"."""
    background = int(np.median(crop))
    ink = np.abs(crop.astype(np.int16) - background) > _INK
    columns = np.flatnonzero(ink.any(axis=0))
    if not len(columns):
        return crop
    crop, ink = _without_underline(crop, ink, columns, background)
    left, right = max(int(columns[0]) - _MARGIN, 0), int(columns[-1]) + 1 + _MARGIN
    cut = _squeezed(crop[:, left:right], ink[:, left:right])
    pad_left = _MARGIN * _cut_text(ink[:, 0], ink[:, 1:2])
    pad_right = _MARGIN * _cut_text(ink[:, -1], ink[:, -2:-1])
    pad_top, pad_bottom = (
        _EDGE * _cut_text(ink[0], ink[1:2]),
        _EDGE * _cut_text(ink[-1], ink[-2:-1]),
    )
    if not (pad_left or pad_right or pad_top or pad_bottom):
        return cut
    return cv2.copyMakeBorder(
        cut, pad_top, pad_bottom, pad_left, pad_right, cv2.BORDER_CONSTANT, value=background
    )


def _without_underline(
    crop: np.ndarray, ink: np.ndarray, columns: np.ndarray, background: int
) -> tuple[np.ndarray, np.ndarray]:
    """`crop` and its `ink` with a link's underline painted over with `background`: one
    to _UNDERLINE rows of ink across nine tenths or more of the ink's width (twice as
    wide as high or more: a word), in the lower half of the ink's rows, with ink above
    them. It joined the words into one
    blob, and OCR read 'Report to the board' as 'Reporttotheboard', the line under a
    space as '_' ('Weekly_report')."""
    left, right = int(columns[0]), int(columns[-1]) + 1
    rows = np.flatnonzero(ink.any(axis=1))
    if right - left < 2 * (int(rows[-1]) - int(rows[0]) + 1):
        return crop, ink  # a letter or two: an 'L''s foot is no underline
    full = np.flatnonzero(ink[:, left:right].mean(axis=1) >= 0.9)
    middle = (int(rows[0]) + int(rows[-1])) / 2
    full = full[full > middle]
    if not len(full) or full[-1] - full[0] >= _UNDERLINE or not ink[: full[0]].any():
        return crop, ink
    # an underline stands a row below the letters' feet, with only descenders crossing
    # that row; serifs at the feet ('All' in a bold serif, read 'A11' without them) sit
    # on the letters' stems
    if ink[full[0] - 1, left:right].mean() > 0.3:
        return crop, ink
    crop, ink = crop.copy(), ink.copy()
    crop[full[0] : full[-1] + 1] = background
    ink[full[0] : full[-1] + 1] = False
    return crop, ink


def _squeezed(crop: np.ndarray, ink: np.ndarray) -> np.ndarray:
    """`crop` with every run of blank columns longer than _GAP times its height cut to
    that length (a word space is under half the height: words stay apart)."""
    longest = max(round(_GAP * crop.shape[0]), 8)
    blank: list[bool] = [not bool(column) for column in np.asarray(ink.any(axis=0))]
    keep = np.ones(len(blank), dtype=np.bool_)
    start = None
    for column, empty in enumerate([*blank, False]):
        if empty and start is None:
            start = column
        elif not empty and start is not None:
            if column - start > longest:
                keep[start + longest // 2 : column - (longest - longest // 2)] = False
            start = None
    return crop if keep.all() else crop[:, keep]


def _cut_text(side: np.ndarray, inner: np.ndarray) -> bool:
    """Whether text runs into a crop's side, given the ink of its `side` column (or row)
    and of the one inside it: ink in _CUT pixels of the side or more, and beside it (a
    box's thin border or a line running off the crop is no text cut, and given a margin
    it would read as a stray '|', ']' or '-')."""
    return inner.size > 0 and int(side.sum()) >= _CUT and bool(inner.any())
