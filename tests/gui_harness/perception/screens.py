"""Synthetic UI screenshots for the perception tests and benchmarks.

`form_screen()` draws a 1280×800 settings form with PIL and returns it with the ground
truth (kind, box, label) of every element, so detection can be checked without a display.
The benchmarks import it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

__all__ = ["DEJAVU", "Truth", "clicks_on", "dark_screen", "font", "form_screen", "iou"]

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
BACKGROUND = (236, 236, 236)


@dataclass(frozen=True)
class Truth:
    """One control drawn on a synthetic screen: what it is, where, and its text."""

    kind: str
    box: tuple[int, int, int, int]
    label: str | None = None


def font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans at `size` pixels when installed, else Pillow's bundled font."""
    if DEJAVU.exists():
        return ImageFont.truetype(str(DEJAVU), size)
    return ImageFont.load_default(size=size)


def _text(
    draw: ImageDraw.ImageDraw,
    xy: tuple[int, int],
    text: str,
    size: int = 14,
    fill: tuple[int, int, int] = (30, 30, 30),
) -> tuple[int, int, int, int]:
    left, top, right, bottom = draw.textbbox(xy, text, font=font(size))
    draw.text(xy, text, font=font(size), fill=fill)
    return (left, top, right - left, bottom - top)


def _centered(
    draw: ImageDraw.ImageDraw,
    box: tuple[int, int, int, int],
    text: str,
    fill: tuple[int, int, int],
    size: int = 14,
) -> None:
    x, y, w, h = box
    draw.text((x + w / 2, y + h / 2), text, font=font(size), fill=fill, anchor="mm")


def _field(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], text: str = "") -> None:
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=(255, 255, 255), outline=(150, 150, 150))
    if text:
        draw.text((x + 6, y + h / 2), text, font=font(14), fill=(20, 20, 20), anchor="lm")


def _sunken_field(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int]) -> None:
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=(255, 255, 255))
    draw.line((x, y, x + w - 1, y), fill=(130, 130, 130), width=2)
    draw.line((x, y, x, y + h - 1), fill=(130, 130, 130), width=2)
    draw.line((x, y + h - 1, x + w - 1, y + h - 1), fill=(250, 250, 250), width=1)
    draw.line((x + w - 1, y, x + w - 1, y + h - 1), fill=(250, 250, 250), width=1)


def _raised_button(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], text: str) -> None:
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=(217, 217, 217))
    draw.line((x, y, x + w - 1, y), fill=(255, 255, 255), width=2)
    draw.line((x, y, x, y + h - 1), fill=(255, 255, 255), width=2)
    draw.line((x, y + h - 2, x + w - 1, y + h - 2), fill=(110, 110, 110), width=2)
    draw.line((x + w - 2, y, x + w - 2, y + h - 1), fill=(110, 110, 110), width=2)
    _centered(draw, box, text, (0, 0, 0))


def _checkbox(draw: ImageDraw.ImageDraw, box: tuple[int, int, int, int], checked: bool) -> None:
    x, y, w, h = box
    draw.rectangle((x, y, x + w - 1, y + h - 1), fill=(255, 255, 255), outline=(80, 80, 80))
    if checked:
        draw.line(
            (x + 3, y + h // 2, x + w // 2 - 1, y + h - 4, x + w - 4, y + 3),
            fill=(30, 30, 30),
            width=2,
        )


def form_screen(size: tuple[int, int] = (1280, 800)) -> tuple[Image.Image, list[Truth]]:
    """A settings form: fields, checkboxes, buttons, text, icons and a framed group."""
    image = Image.new("RGB", size, BACKGROUND)
    draw = ImageDraw.Draw(image)
    truths: list[Truth] = []

    truths.append(
        Truth("text", _text(draw, (40, 24), "Account settings", size=24), "Account settings")
    )
    for row, (name, value) in enumerate([("Name:", ""), ("Email:", "ada@example.com")]):
        y = 84 + row * 48
        truths.append(Truth("text", _text(draw, (40, y + 5), name), name))
        box = (140, y, 280, 30)
        _field(draw, box, value)
        truths.append(Truth("field", box, value or None))
    for row, (name, checked) in enumerate(
        [("Subscribe to newsletter", False), ("Remember me", True)]
    ):
        y = 190 + row * 34
        box = (140, y, 16, 16)
        _checkbox(draw, box, checked)
        truths.append(Truth("checkbox", box, name))
        truths.append(Truth("text", _text(draw, (166, y), name), name))

    save = (140, 270, 100, 34)
    draw.rectangle((140, 270, 239, 303), fill=(40, 110, 220))
    _centered(draw, save, "Save", (255, 255, 255))
    truths.append(Truth("button", save, "Save"))
    cancel = (256, 270, 100, 34)
    draw.rectangle((256, 270, 355, 303), fill=(226, 226, 226), outline=(140, 140, 140))
    _centered(draw, cancel, "Cancel", (20, 20, 20))
    truths.append(Truth("button", cancel, "Cancel"))
    rounded = (372, 270, 100, 34)
    draw.rounded_rectangle(
        (372, 270, 471, 303), radius=6, fill=(250, 250, 250), outline=(120, 120, 120)
    )
    _centered(draw, rounded, "Open", (20, 20, 20))
    truths.append(Truth("button", rounded, "Open"))

    draw.line((40, 340, 620, 340), fill=(190, 190, 190))

    draw.ellipse((40, 370, 71, 401), fill=(220, 60, 50))
    truths.append(Truth("icon", (40, 370, 32, 32)))
    draw.polygon([(100, 401), (116, 370), (132, 401)], fill=(40, 160, 80))
    truths.append(Truth("icon", (100, 370, 33, 32)))
    draw.polygon([(176, 370), (192, 386), (176, 402), (160, 386)], fill=(240, 170, 20))
    truths.append(Truth("icon", (160, 370, 33, 33)))

    paragraph = [
        "Perception finds the controls on this screen and numbers them,",
        "so the planner can say which one to click instead of guessing pixels.",
        "Each line of text becomes one text component.",
    ]
    for row, line in enumerate(paragraph):
        truths.append(Truth("text", _text(draw, (40, 440 + row * 26), line), line))

    draw.rectangle((700, 84, 1219, 363), outline=(170, 170, 170))
    truths.append(Truth("text", _text(draw, (720, 100), "Server"), "Server"))
    host = (800, 96, 300, 30)
    _sunken_field(draw, host)
    truths.append(Truth("field", host))
    apply = (800, 150, 110, 32)
    _raised_button(draw, apply, "Apply")
    truths.append(Truth("button", apply, "Apply"))
    test = (930, 150, 150, 32)
    _raised_button(draw, test, "Test connection")
    truths.append(Truth("button", test, "Test connection"))
    truths.append(
        Truth("text", _text(draw, (720, 220), "Status: not connected"), "Status: not connected")
    )
    return image, truths


def dark_screen() -> tuple[Image.Image, list[Truth]]:
    """A dark-theme search bar: dark fields, a filled and an outlined button, a checkbox."""
    image = Image.new("RGB", (800, 400), (37, 37, 38))
    draw = ImageDraw.Draw(image)
    light = (220, 220, 220)
    truths = [Truth("text", _text(draw, (20, 20), "Search files", fill=light), "Search files")]
    draw.rectangle((20, 50, 319, 79), fill=(60, 60, 60), outline=(90, 90, 90))
    draw.text((28, 65), "query", font=font(14), fill=light, anchor="lm")
    truths.append(Truth("field", (20, 50, 300, 30), "query"))
    draw.rectangle((340, 50, 439, 79), fill=(14, 99, 156))
    _centered(draw, (340, 50, 100, 30), "Find", (255, 255, 255))
    truths.append(Truth("button", (340, 50, 100, 30), "Find"))
    draw.rectangle((460, 50, 559, 79), outline=(120, 120, 120))
    _centered(draw, (460, 50, 100, 30), "Clear", light)
    truths.append(Truth("button", (460, 50, 100, 30), "Clear"))
    draw.rectangle((20, 100, 35, 115), outline=(160, 160, 160))
    truths.append(Truth("checkbox", (20, 100, 16, 16), "Match case"))
    truths.append(Truth("text", _text(draw, (44, 100), "Match case", fill=light), "Match case"))
    draw.rectangle((20, 130, 319, 159), fill=(30, 30, 30), outline=(70, 70, 70))
    truths.append(Truth("field", (20, 130, 300, 30)))
    return image, truths


def iou(a: tuple[int, int, int, int], b: tuple[int, int, int, int]) -> float:
    """Intersection over union of two (x, y, w, h) boxes."""
    ix = max(0, min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0]))
    iy = max(0, min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1]))
    inter = ix * iy
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def clicks_on(box: tuple[int, int, int, int], target: tuple[int, int, int, int]) -> bool:
    """Whether a click on `box`'s centre lands on `target` and `box` is mostly inside it
    (a check box's square in its row with the label, a tab's label in the tab): the
    "clickable" measure of the pixel path against a page's DOM."""
    x, y, w, h = box
    tx, ty, tw, th = target
    cx, cy = x + w // 2, y + h // 2
    ix = min(x + w, tx + tw) - max(x, tx)
    iy = min(y + h, ty + th) - max(y, ty)
    inside = max(ix, 0) * max(iy, 0) >= 0.5 * w * h
    return tx <= cx < tx + tw and ty <= cy < ty + th and inside
