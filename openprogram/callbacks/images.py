"""ImageRetention: keep only the newest history images in what a model call sees.

Owns no mechanism of its own: it sets `max_images`, which `Runtime._max_images()` reads
(the tightest limit wins) and `render_context` applies, turning older images into text
placeholders with an "omitted" entry in the render report (recorded_report).
"""

from __future__ import annotations

from openprogram.callbacks.base import Callback
from openprogram.errors import UsageError

__all__ = ["ImageRetention"]


class ImageRetention(Callback):
    """Send at most the `n` most recent history images with each model call.

    Older images become `[image omitted: <image sha256:…>]` placeholders and each one gets
    an `{"kind": "omitted", ...}` entry in the llm node's render report (read it with
    `recorded_report`). The images of the current llm() content are always sent.
    Combined with `Runtime(max_images=...)` the smaller limit applies.
    """

    def __init__(self, n: int) -> None:
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise UsageError(f"ImageRetention(n={n!r}): n must be an int >= 0")
        self.max_images = n

    def __repr__(self) -> str:
        return f"ImageRetention({self.max_images})"
