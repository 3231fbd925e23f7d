"""Token counts for compaction: what a text or an image costs the model of a call.

litellm's counter (its bundled tokenizers, no network) for litellm model names; an
estimate of four characters a token for offline models (ScriptedModel, ReplayModel, your
own). Images by the tile rule OpenAI publishes. Also the one way litellm is imported
(`import_litellm`: offline-safe and quiet), for the counter and for _litellm.py's
models. Start at counter().
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
from dataclasses import dataclass
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

_CHARS_PER_TOKEN = 4
_MESSAGE_TOKENS = 4  # a chat message's own framing, as OpenAI counts it


@dataclass(frozen=True)
class Counter:
    """Counts tokens for one model (`exact`: through litellm's tokenizer for it)."""

    model: str
    exact: bool

    def text(self, text: str) -> int:
        if not text:
            return 0
        if self.exact:
            try:
                return int(_litellm_count(self.model, text))
            except Exception:  # a model litellm cannot tokenize: estimate, never fail a render
                pass
        return math.ceil(len(text) / _CHARS_PER_TOKEN)

    def image(self, width: int, height: int) -> int:
        return image_tokens(width, height)

    def message(self) -> int:
        return _MESSAGE_TOKENS


@functools.lru_cache(maxsize=64)
def counter(model: str | None) -> Counter:
    """The Counter for a model name (None or an offline model's name: the estimate)."""
    name = model or ""
    return Counter(name, _known_to_litellm(name))


def _known_to_litellm(name: str) -> bool:
    if not name or name in ("scripted", "replay"):
        return False
    try:
        litellm = import_litellm()
    except ImportError:  # pragma: no cover - litellm is a core dependency
        return False
    return "/" in name or name in litellm.model_cost


def _litellm_count(model: str, text: str) -> Any:
    return import_litellm().token_counter(model=model, text=text)


_litellm: ModuleType | None = None
_preload: threading.Thread | None = None
_preload_lock = threading.Lock()


def preload_litellm() -> None:
    """Start importing litellm on a daemon thread, once: a Runtime that names a model only
    litellm serves calls this, so the import (seconds) overlaps the program's own set-up
    instead of delaying its first reply. import_litellm() then finds it done, or waits
    for the same import (Python's import lock) rather than starting another."""
    global _preload
    with _preload_lock:
        if _litellm is not None or _preload is not None:
            return
        _preload = threading.Thread(
            target=_quiet_import, name="openprogram-litellm-import", daemon=True
        )
        _preload.start()


def _quiet_import() -> None:
    try:
        import_litellm()
    except Exception:  # the caller's own import_litellm() raises it where it is needed
        log.debug("importing litellm in the background failed", exc_info=True)


def import_litellm() -> ModuleType:
    """Import litellm once, offline-safe and quiet: its cost map read from the installed
    package (not fetched: offline that is seconds of retries), telemetry off."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True
        _litellm = litellm
    return _litellm


def image_tokens(width: int, height: int) -> int:
    """Tokens of one image sent in high detail: fit in 2048×2048, shortest side to 768,
    then 170 a 512-pixel tile plus 85."""
    if width <= 0 or height <= 0:
        return 85
    fit = min(1.0, 2048 / max(width, height))
    wide, high = width * fit, height * fit
    short = min(1.0, 768 / min(wide, high))
    return 85 + 170 * math.ceil(wide * short / 512) * math.ceil(high * short / 512)
