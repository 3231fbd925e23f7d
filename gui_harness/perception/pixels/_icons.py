"""Names for icon-only buttons from the icon they draw: `icon_label()` matches a crop
against the installed icon theme's symbolic icons for common actions (a magnifier is
"Search", three bars "Main Menu") and says which, or None. Used for buttons the
accessibility tree leaves unnamed (GTK 4.8 does not expose their tooltips).
`glyph_label()` names a button whose one mark is a minus ("-"), which OCR does not read
as text (it reads the "+" beside it).
"""

from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

__all__ = ["glyph_label", "icon_label"]

_THEMES = Path("/usr/share/icons")
_SIZE = 16  # px: toolkits draw a button's symbolic icon at 16 px (scale 1)
_MATCH = 0.8  # normalised correlation of a crop's ink with an icon that names it
_MARGIN = 0.1  # how much better than any other icon's its match must be
_INK = 24  # grey levels from the crop's background that make ink
# the icon (freedesktop naming) -> what a user calls the button showing it
_ACTIONS = {
    "edit-find": "Search",
    "system-search": "Search",
    "open-menu": "Main Menu",
    "view-more": "More",
    "view-more-horizontal": "More",
    "window-close": "Close",
    "go-previous": "Back",
    "go-next": "Forward",
    "go-home": "Home",
    "go-up": "Up",
    "list-add": "Add",
    "list-remove": "Remove",
    "edit-delete": "Delete",
    "user-trash": "Delete",
    "document-open": "Open",
    "document-save": "Save",
    "document-new": "New",
    "document-print": "Print",
    "view-refresh": "Reload",
    "edit-clear": "Clear",
    "edit-copy": "Copy",
    "edit-paste": "Paste",
    "edit-cut": "Cut",
    "edit-undo": "Undo",
    "edit-redo": "Redo",
    "media-playback-start": "Play",
    "media-playback-pause": "Pause",
    "emblem-system": "Settings",
    "zoom-in": "Zoom In",
    "zoom-out": "Zoom Out",
    "view-fullscreen": "Fullscreen",
    "view-list": "List View",
    "view-grid": "Grid View",
    "mail-send": "Send",
}


def icon_label(crop: np.ndarray) -> str | None:
    """What the icon on `crop` (grey, a button's box) means, when it is one of the theme's
    icons for a common action; None for any other drawing, or with no theme installed."""
    icons = _icons()
    if not icons or min(crop.shape) < _SIZE:
        return None
    crop = crop.astype(np.float32)
    ink = np.abs(crop - float(np.median(crop)))
    if float(ink.max()) <= _INK:
        return None
    ink /= float(ink.max())
    scores: dict[str, float] = {}
    for name, icon in icons.items():
        found = float(cv2.matchTemplate(ink, icon, cv2.TM_CCOEFF_NORMED).max())
        label = _ACTIONS[name]
        scores[label] = max(scores.get(label, -1.0), found)
    ranked = sorted(scores.items(), key=lambda item: -item[1])
    best, score = ranked[0]
    second = ranked[1][1] if len(ranked) > 1 else -1.0
    return best if score >= _MATCH and score - second >= _MARGIN else None


def glyph_label(crop: np.ndarray) -> str | None:
    """ "-" when the only ink inside `crop` (grey, a button's box less its border) is one
    short horizontal bar near its middle (1-4 px high, at least 3 times as wide as high,
    a fifth to three quarters of the crop's width, centred within a quarter of it): a
    minus; else None."""
    if min(crop.shape) < 8:
        return None
    height, width = crop.shape
    ink = (np.abs(crop.astype(np.int16) - int(np.median(crop))) > 2 * _INK).astype(np.uint8)
    count, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
    if count != 2:
        return None  # not one mark
    x, y, w, h = (int(v) for v in stats[1, :4])
    if not (1 <= h <= 4 and w >= 3 * h and width / 5 <= w <= 0.75 * width):
        return None
    if stats[1, 4] < 0.8 * w * h:
        return None  # a bar is solid
    if abs(x + w / 2 - width / 2) > width / 4 or abs(y + h / 2 - height / 2) > height / 4:
        return None
    return "-"


@functools.cache
def _icons() -> dict[str, np.ndarray]:
    """The symbolic icons of _ACTIONS found in the installed themes, as ink (0-1) at _SIZE
    px, the first theme's that has one (Adwaita before the rest)."""
    found: dict[str, np.ndarray] = {}
    themes = sorted(_THEMES.glob("*"), key=lambda theme: theme.name != "Adwaita")
    for theme in themes:
        for name in _ACTIONS:
            if name in found:
                continue
            for path in theme.glob(f"{_SIZE}x{_SIZE}/*/{name}-symbolic.symbolic.png"):
                picture = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
                if picture is not None and picture.ndim == 3 and picture.shape[2] == 4:
                    found[name] = picture[:, :, 3].astype(np.float32) / 255.0
                    break
    return found
