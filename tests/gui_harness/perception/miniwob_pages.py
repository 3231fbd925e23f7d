"""MiniWoB++ pages in headless Chromium for the perception tests and benchmark:
screenshots of the task area and the DOM boxes of its visible elements (the truth).

Needs the bench extra (`miniwob` for the task HTML, selenium), chromium and chromedriver.
"""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from PIL import Image

# Interactive: what a user can click or type into. Everything visible counts for precision.
_COLLECT = """
const area = document.querySelector('#wrap').getBoundingClientRect();
const interactive = 'input:not([type=hidden]), button, select, textarea, a, .alink,'
  + ' [role=button], [role=tab], [role=link], [role=checkbox], [role=radio], [onclick],'
  + ' .ui-dialog-titlebar-close, h3.ui-accordion-header, .ui-menu-item, .ui-tabs-anchor';
function visible(e) {
  const s = getComputedStyle(e);
  return s.visibility !== 'hidden' && s.display !== 'none' && parseFloat(s.opacity) > 0;
}
function clip(r) {
  const x0 = Math.max(r.left, area.left), y0 = Math.max(r.top, area.top);
  const x1 = Math.min(r.right, area.right), y1 = Math.min(r.bottom, area.bottom);
  if (x1 - x0 < 3 || y1 - y0 < 3) return null;
  return [Math.round(x0 - area.left), Math.round(y0 - area.top),
          Math.round(x1 - x0), Math.round(y1 - y0)];
}
const all = [], clickable = [];
for (const e of document.querySelectorAll('body *')) {
  if (!visible(e)) continue;
  const box = clip(e.getBoundingClientRect());
  if (!box) continue;
  all.push(box);
  const kind = e.tagName.toLowerCase() + (e.type ? ':' + e.type : '');
  if (e.matches(interactive)) clickable.push([kind, box]);
  // a text node's own box: a line of text inside a bigger element
  for (const n of e.childNodes) {
    if (n.nodeType === 3 && n.textContent.trim()) {
      const range = document.createRange(); range.selectNodeContents(n);
      for (const r of range.getClientRects()) { const b = clip(r); if (b) all.push(b); }
    }
  }
}
return [[Math.round(area.left), Math.round(area.top), Math.round(area.width),
         Math.round(area.height)], all, clickable];
"""


@dataclass(frozen=True)
class Page:
    """One episode's first screen: the task area's pixels and its DOM truth."""

    task: str
    seed: int
    image: Image.Image
    elements: list[tuple[int, int, int, int]]
    interactive: list[tuple[str, tuple[int, int, int, int]]]


def pages(tasks: list[str], seeds: list[int], *, zoom: float = 1.0) -> Iterator[Page]:
    """Each task at each seed, in one headless Chromium at `zoom` device pixels per CSS px."""
    from miniwob.selenium_instance import DEFAULT_BASE_URL  # type: ignore[import-untyped]
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for argument in (
        "headless=new", "no-sandbox", "disable-gpu", "hide-scrollbars",
        "window-size=500,700", f"force-device-scale-factor={zoom}",
    ):  # fmt: skip
        options.add_argument(argument)
    options.binary_location = os.environ.get("CHROMIUM", shutil.which("chromium") or "")
    service = Service(executable_path=shutil.which("chromedriver"))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        for task in tasks:
            url = f"{DEFAULT_BASE_URL}{task}.html"
            if not Path(url.removeprefix("file://")).exists():
                raise FileNotFoundError(f"miniwob has no task {task!r} ({url})")
            driver.get(url)
            for seed in seeds:
                driver.execute_script(f"Math.seedrandom({seed!r});")
                driver.execute_script("core.startEpisodeReal();")
                driver.execute_script("return WOB_TASK_READY;")
                area, elements, interactive = driver.execute_script(_COLLECT)
                shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
                x, y, w, h = (round(v * zoom) for v in area)
                image = shot.crop((x, y, x + w, y + h))
                scale = lambda b: tuple(round(v * zoom) for v in b)  # noqa: E731
                yield Page(
                    task,
                    seed,
                    image,
                    [scale(b) for b in elements],
                    [(kind, scale(b)) for kind, b in interactive],
                )
                driver.execute_script("return core.endEpisode(0);")
    finally:
        driver.quit()
