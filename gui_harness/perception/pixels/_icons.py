"""Names for icon-only buttons from the icon they draw: `icon_label()` matches a crop
against the installed icon theme's symbolic icons for common actions (a magnifier is
"Search", three bars "Main Menu") and says which, or None. Used for buttons the
accessibility tree leaves unnamed (GTK 4.8 does not expose their tooltips). A button
whose one mark is a symbol ("-", "×") is _glyphs.py's.
"""

from __future__ import annotations

import functools
from pathlib import Path

import cv2
import numpy as np

__all__ = ["icon_label"]

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
