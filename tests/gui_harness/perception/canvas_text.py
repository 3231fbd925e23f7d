"""Text on a canvas, drawn: lines of large text (a slide's, a drawing's) in a given
font and size, with their boxes; and check boxes beside their captions at sizes real
toolkits use, which must stay check boxes. Shared by test_detect_canvas.py and
benchmarks/bench_perception.py --canvas."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from gui_harness.perception import Component

URW = Path("/usr/share/fonts/opentype/urw-base35")
DEJAVU = Path("/usr/share/fonts/truetype/dejavu")
TUNED = [DEJAVU / "DejaVuSans.ttf"]  # the one Impress drew the failing title in
HELD_OUT = [
    DEJAVU / "DejaVuSerif.ttf",
    URW / "NimbusSans-Regular.otf",
    URW / "NimbusRoman-Regular.otf",
    URW / "URWGothic-Book.otf",
    URW / "C059-Roman.otf",
    URW / "NimbusMonoPS-Regular.otf",
]
SIZES = (22, 28, 36, 44)  # px: a slide's body text to its title, as an editor shows them
PHRASES = (
    "Quarterly Report",
    "Q3 costs were flat",
    "Open questions for the board",
    "Good progress on goals",
    "Agenda",
    "Docs and code",
)
Box = tuple[int, int, int, int]


def canvas_lines(font: Path, size: int) -> tuple[Image.Image, list[Box]]:
    """A 1280×800 white canvas with each of PHRASES drawn in `font` at `size` px, and
    the box of each line's ink."""
    image = Image.new("RGB", (1280, 800), (255, 255, 255))
    draw = ImageDraw.Draw(image)
    face = ImageFont.truetype(str(font), size)
    boxes = []
    y = 40
    for number, phrase in enumerate(PHRASES):
        x = 60 + 300 * (number % 2)  # not all at one x: not a list
        left, top, right, bottom = draw.textbbox((x, y), phrase, font=face)
        draw.text((x, y), phrase, font=face, fill=(20, 20, 20))
        boxes.append((int(left), int(top), int(right - left), int(bottom - top)))
        y += int(size * 2.2)
    return image, boxes


def whole(components: list[Component], line: Box) -> bool:
    """Whether `line` came out as one text component (its ink, give or take a few
    pixels) with no check box, radio, icon or button inside it."""
    x, y, w, h = line
    inside = [
        c
        for c in components
        if c.box[0] + c.box[2] > x and c.box[0] < x + w and c.box[1] + c.box[3] > y
        and c.box[1] < y + h
    ]  # fmt: skip
    texts = [c for c in inside if c.kind == "text"]
    if len(inside) != 1 or len(texts) != 1:
        return False
    tx, _, tw, _ = texts[0].box
    return abs(tx - x) <= 4 and abs(tx + tw - x - w) <= 4 and tw >= 0.9 * w


def captioned_boxes(side: int, font_px: int) -> tuple[Image.Image, list[Box]]:
    """Check boxes `side` px square, each 2–6 px left of its caption in DejaVu Sans at
    `font_px` px, on a light grey window; and the boxes."""
    image = Image.new("RGB", (640, 400), (246, 245, 244))
    draw = ImageDraw.Draw(image)
    face = ImageFont.truetype(str(DEJAVU / "DejaVuSans.ttf"), font_px)
    boxes = []
    for row, (gap, caption) in enumerate(
        [(2, "Quiet mode"), (3, "Open at login"), (4, "Use a proxy"), (6, "Autosave")]
    ):
        x, y = 40, 40 + row * (side + 24)
        draw.rectangle(
            (x, y, x + side - 1, y + side - 1), fill=(255, 255, 255), outline=(80, 80, 80)
        )
        middle = y + side // 2
        draw.text((x + side + gap, middle), caption, font=face, fill=(0, 0, 0), anchor="lm")
        boxes.append((x, y, side, side))
    return image, boxes
