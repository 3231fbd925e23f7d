"""Images as values: content-addressed, stored once, referenced from nodes.

Owns `Image` (a PIL image, a file or PNG bytes, hashed by sha256 of its pixels) and
`ImageRef` (what a node holds instead of the pixels). The DAG keeps one `Image` per hash;
stores persist them as blobs. Pillow is imported only when pixels are needed.
"""

from __future__ import annotations

import base64
import hashlib
import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeGuard

from pydantic import BaseModel, ConfigDict

from openprogram.echo import echo
from openprogram.errors import UsageError

if TYPE_CHECKING:
    import PIL.Image

__all__ = ["Image", "ImageRef", "is_image"]


class ImageRef(BaseModel):
    """A reference to an image held in the DAG's blob table."""

    model_config = ConfigDict(frozen=True)

    sha256: str
    width: int
    height: int

    def __str__(self) -> str:
        return f"<image sha256:{self.sha256[:12]} {self.width}x{self.height}>"

    def to_json(self) -> dict[str, Any]:
        return {"$image": self.sha256, "width": self.width, "height": self.height}


def _is_pil(value: object) -> TypeGuard[PIL.Image.Image]:
    pil = sys.modules.get("PIL.Image")
    return pil is not None and isinstance(value, pil.Image)


def is_image(value: object) -> bool:
    """Whether `value` is something the DAG stores as an image (PIL or openprogram.Image)."""
    return isinstance(value, Image) or _is_pil(value)


class Image:
    """An image value: a PIL image, a path to an image file, or encoded PNG/JPEG bytes.

    The hash covers mode, size and pixels, so the same picture loaded twice is stored once.
    """

    __slots__ = ("_pil", "_png", "_sha256")

    def __init__(self, source: object) -> None:
        self._pil: PIL.Image.Image
        self._png: bytes | None = None
        self._sha256: str | None = None
        if isinstance(source, Image):  # a copy: the same pixels, PNG and hash, as made
            for slot in Image.__slots__:
                setattr(self, slot, getattr(source, slot))
        elif _is_pil(source):
            self._pil = source
        elif isinstance(source, (bytes, bytearray)):
            self._pil = _open(io.BytesIO(bytes(source)), "the given bytes")
            self._png = bytes(source) if bytes(source[:8]) == b"\x89PNG\r\n\x1a\n" else None
        elif isinstance(source, (str, Path)):
            path = Path(source)
            if not path.is_file():
                raise UsageError(f"image path {echo(str(path))} does not exist or is not a file")
            self._pil = _open(path, repr(str(path)))
        else:
            raise UsageError(
                f"cannot use {type(source).__name__} as an image; pass a PIL image, "
                "a file path or PNG/JPEG bytes"
            )

    @classmethod
    def recorded(cls, data: bytes | Image, sha256: str) -> Image:
        """An image read back from a store or a dump: `data` (PNG bytes, or an Image held
        elsewhere) as recorded under `sha256` (the hash of its pixels, not of these
        bytes), which is not computed again."""
        image = cls(data)
        image._sha256 = sha256
        return image

    @property
    def pil(self) -> PIL.Image.Image:
        """The PIL image."""
        return self._pil

    @property
    def size(self) -> tuple[int, int]:
        width, height = self._pil.size
        return width, height

    @property
    def sha256(self) -> str:
        if self._sha256 is None:
            digest = hashlib.sha256()
            digest.update(f"{self._pil.mode}:{self._pil.size[0]}x{self._pil.size[1]}:".encode())
            digest.update(self._pil.tobytes())
            self._sha256 = digest.hexdigest()
        return self._sha256

    def ref(self) -> ImageRef:
        width, height = self.size
        return ImageRef(sha256=self.sha256, width=width, height=height)

    def png(self) -> bytes:
        """The image encoded as PNG (encoded once, then cached)."""
        if self._png is None:
            buffer = io.BytesIO()
            image = (
                self._pil if self._pil.mode in ("RGB", "RGBA", "L") else self._pil.convert("RGB")
            )
            image.save(buffer, format="PNG", compress_level=1)
            self._png = buffer.getvalue()
        return self._png

    def data_url(self) -> str:
        return "data:image/png;base64," + base64.b64encode(self.png()).decode("ascii")

    def __repr__(self) -> str:
        width, height = self.size
        return f"Image(sha256={self.sha256[:12]}…, {width}x{height})"


def _open(source: Any, described: str) -> Any:
    try:
        from PIL import Image as PILImage
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            'images need Pillow: pip install "openprogram[gui]" (or pip install pillow)'
        ) from exc
    try:
        image = PILImage.open(source)
        image.load()
    except OSError as exc:
        raise UsageError(f"{described} is not an image Pillow can read: {exc}") from exc
    return image
