"""Pixel conversions shared by the perception modules (PIL or numpy in, numpy out).

Private: numpy arrays are taken as RGB(A) or single-channel grey, never BGR.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
from PIL import Image

__all__ = ["ImageLike", "clip_box", "grey_array", "pil_image", "rgb_array"]

ImageLike = Any  # PIL.Image.Image | np.ndarray; Any because numpy's stubs reject a union here


def rgb_array(image: ImageLike) -> np.ndarray:
    """An HxWx3 uint8 RGB array of `image` (a PIL image or an RGB/RGBA/grey array)."""
    if isinstance(image, Image.Image):
        if image.mode != "RGB":
            image = image.convert("RGB")
        return np.asarray(image)
    array = _checked(image)
    if array.ndim == 2:
        return cv2.cvtColor(array, cv2.COLOR_GRAY2RGB)
    if array.shape[2] == 4:
        return cv2.cvtColor(array, cv2.COLOR_RGBA2RGB)
    return array


def grey_array(image: ImageLike) -> np.ndarray:
    """An HxW uint8 grey array of `image` (luma, as cv2 computes it)."""
    if isinstance(image, Image.Image):
        # Pillow's own conversion (same ITU-R 601 weights) skips a 3-channel copy.
        return np.asarray(image if image.mode == "L" else image.convert("L"))
    array = _checked(image)
    if array.ndim == 2:
        return array
    code = cv2.COLOR_RGBA2GRAY if array.shape[2] == 4 else cv2.COLOR_RGB2GRAY
    return cv2.cvtColor(array, code)


def pil_image(image: ImageLike) -> Image.Image:
    """`image` as an RGB PIL image (the same object when it already is one)."""
    if isinstance(image, Image.Image):
        return image if image.mode == "RGB" else image.convert("RGB")
    return Image.fromarray(rgb_array(image))


def clip_box(
    box: tuple[int, int, int, int], size: tuple[int, int]
) -> tuple[int, int, int, int] | None:
    """`box` (x, y, w, h) cut to an image of `size` (w, h); None when nothing is left."""
    x, y, w, h = box
    x0, y0 = max(0, x), max(0, y)
    x1, y1 = min(size[0], x + w), min(size[1], y + h)
    if x1 <= x0 or y1 <= y0:
        return None
    return (x0, y0, x1 - x0, y1 - y0)


def _checked(image: Any) -> np.ndarray:
    if not isinstance(image, np.ndarray):
        raise TypeError(f"expected a PIL image or a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise TypeError(f"expected a uint8 array, got dtype={image.dtype!s}")
    if image.ndim == 2 or (image.ndim == 3 and image.shape[2] in (3, 4)):
        return image
    raise TypeError(f"expected an HxW, HxWx3 or HxWx4 array, got shape={image.shape!r}")
