"""The Desktop protocol every backend implements.

A desktop has a `size` in screen pixels, takes a `screenshot()` (a PIL image of the whole
screen, RGB) and runs one already-resolved action in screen coordinates with
`execute(action)`. Element references and the image↔screen transform are resolved by
gui_harness.actions before an action reaches a desktop. Optional, used when present:
`grab(box)` (a part of the screen: dispatch's check before a click),
`wait_settled(timeout=...)` (settling from the desktop's own events), and `held_keys`,
`held_buttons` and `release_held()` (what key_down and mouse_down left held: the policy
counts held keys into a chord, the agent releases them when its run ends).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from PIL import Image

    from gui_harness.actions import Action

__all__ = ["Desktop"]


@runtime_checkable
class Desktop(Protocol):
    """What gui_agent needs of a screen: its size, a picture of it, and input events."""

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screen in pixels."""
        ...

    def screenshot(self) -> Image.Image:
        """A picture of the whole screen, RGB, exactly `size` pixels."""
        ...

    def execute(self, action: Action) -> None:
        """Perform one action whose coordinates are screen pixels."""
        ...
