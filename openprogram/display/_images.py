"""Downscaled thumbnails of the DAG's images, as data URLs for the HTML views.

Owns the encoding (JPEG, or PNG when tiny) and a cache keyed by content hash, so a
notebook re-displaying a DAG does not encode again. Start at thumbnail_url().
"""

from __future__ import annotations

import base64
import io
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openprogram.core.image import Image

__all__ = ["thumbnail_url"]

_CACHE_SIZE = 1024
_cache: OrderedDict[tuple[str, int], str] = OrderedDict()
_lock = threading.Lock()
_SMALL_PIXELS = 96 * 96


def thumbnail_url(image: Image, max_px: int) -> str:
    """`image` (an openprogram.Image) shrunk to fit `max_px` × `max_px`, as a data URL."""
    key = (image.sha256, max_px)
    with _lock:
        cached = _cache.get(key)
        if cached is not None:
            _cache.move_to_end(key)
            return cached
    url = _encode(image.pil, max_px)
    with _lock:
        _cache[key] = url
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return url


def _shrink(pil: Any, max_px: int) -> Any:
    """Fit within max_px: a box reduce by a whole factor (fast, antialiased), then a
    Lanczos resize of the now small image. Several times faster than thumbnail() on
    screenshots."""
    from PIL import Image as PILImage

    factor = max(pil.size) // max_px
    small = pil.reduce(factor) if factor > 1 else pil
    if max(small.size) > max_px:
        scale = max_px / max(small.size)
        size = (max(1, round(small.width * scale)), max(1, round(small.height * scale)))
        small = small.resize(size, PILImage.Resampling.LANCZOS)
    return small


def _encode(pil: Any, max_px: int) -> str:
    if pil.mode not in ("RGB", "RGBA", "L"):
        pil = pil.convert("RGBA")  # reduce() needs a plain mode (not P, I;16, CMYK…)
    small = _shrink(pil, max_px)
    buffer = io.BytesIO()
    if small.width * small.height <= _SMALL_PIXELS and small.mode in ("RGB", "RGBA", "L", "P"):
        small.save(buffer, format="PNG", optimize=True)
        kind = "png"
    else:
        if small.mode not in ("RGB", "L"):
            small = _flatten(small)
        small.save(buffer, format="JPEG", quality=72, optimize=True)
        kind = "jpeg"
    return f"data:image/{kind};base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _flatten(image: Any) -> Any:
    """RGB on white: JPEG has no alpha, and black behind transparent UI looks wrong."""
    from PIL import Image as PILImage

    rgba = image.convert("RGBA")
    background = PILImage.new("RGB", rgba.size, (255, 255, 255))
    background.paste(rgba, mask=rgba.getchannel("A"))
    return background
