"""MiniWoB++ pages in headless Chromium for the perception tests and benchmark:
screenshots of the task area and the DOM boxes of its visible elements (the truth);
`flight_pages` does the same for the FormWoB airline sites at whole-viewport sizes.

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
_MINIWOB_INTERACTIVE = (
    "input:not([type=hidden]), button, select, textarea, a, .alink,"
    " [role=button], [role=tab], [role=link], [role=checkbox], [role=radio], [onclick],"
    " .ui-dialog-titlebar-close, h3.ui-accordion-header, .ui-menu-item, .ui-tabs-anchor"
)
# The same on a real site, where an `a` without href is often a plain anchor, menus and
# comboboxes carry roles, and a label stands in for a control it hides (a styled radio).
_SITE_INTERACTIVE = (
    "input:not([type=hidden]), button, select, textarea, a[href], summary, [onclick],"
    " [role=button], [role=tab], [role=link], [role=checkbox], [role=radio],"
    " [role=menuitem], [role=option], [role=combobox], [role=switch],"
    " [tabindex]:not([tabindex^='-']), label[for]"
)
# arguments: the area's selector (null: the viewport), the interactive selector, and
# whether an interactive element must be on top somewhere inside its box (real sites
# hide controls under others and in collapsed panels; MiniWoB++'s truth never did this).
_COLLECT = """
const [areaSelector, interactive, onTop] = arguments;
const area = areaSelector ? document.querySelector(areaSelector).getBoundingClientRect()
  : {left: 0, top: 0, right: innerWidth, bottom: innerHeight,
     width: innerWidth, height: innerHeight};
function visible(e) {
  const s = getComputedStyle(e);
  if (s.visibility === 'hidden' || s.display === 'none' || !(parseFloat(s.opacity) > 0))
    return false;
  return !onTop || e.checkVisibility({opacityProperty: true, visibilityProperty: true});
}
function clip(r) {
  const x0 = Math.max(r.left, area.left), y0 = Math.max(r.top, area.top);
  const x1 = Math.min(r.right, area.right), y1 = Math.min(r.bottom, area.bottom);
  if (x1 - x0 < 3 || y1 - y0 < 3) return null;
  return [Math.round(x0 - area.left), Math.round(y0 - area.top),
          Math.round(x1 - x0), Math.round(y1 - y0)];
}
function reachable(e, box) {
  const [x, y, w, h] = box;
  for (const [fx, fy] of [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75]]) {
    const hit = document.elementFromPoint(area.left + x + w * fx, area.top + y + h * fy);
    if (hit && (hit === e || e.contains(hit) || (hit.control && hit.control === e)))
      return true;
  }
  return false;
}
function standsIn(e) {  // a label counts only for a control that is not drawn itself
  if (e.tagName !== 'LABEL') return true;
  const control = e.control;
  return !!control && (!visible(control) || !clip(control.getBoundingClientRect()));
}
const all = [], clickable = [];
for (const e of document.querySelectorAll('body *')) {
  if (!visible(e)) continue;
  const box = clip(e.getBoundingClientRect());
  if (!box) continue;
  all.push(box);
  const kind = e.tagName.toLowerCase() + (e.type ? ':' + e.type : '');
  if (e.matches(interactive) && standsIn(e) && (!onTop || reachable(e, box)))
    clickable.push([kind, box]);
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
# FormWoB flight pages: the wrapper's 375×667 frame, one screen down in it, and a
# desktop window — (width, height, screens scrolled).
FLIGHT_VIEWS = [(375, 667, 0), (375, 667, 1), (1280, 800, 0)]


@dataclass(frozen=True)
class Page:
    """One episode's first screen (or one view of a flight page, `seed` its index in
    FLIGHT_VIEWS): the task area's pixels and its DOM truth."""

    task: str
    seed: int
    image: Image.Image
    elements: list[tuple[int, int, int, int]]
    interactive: list[tuple[str, tuple[int, int, int, int]]]


def _driver(zoom: float):  # type: ignore[no-untyped-def]
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
    return webdriver.Chrome(service=service, options=options)


def _page(driver, task: str, seed: int, zoom: float, *collect: object) -> Page:  # type: ignore[no-untyped-def]
    area, elements, interactive = driver.execute_script(_COLLECT, *collect)
    shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
    x, y, w, h = (round(v * zoom) for v in area)
    image = shot.crop((x, y, x + w, y + h))
    scale = lambda b: tuple(round(v * zoom) for v in b)  # noqa: E731
    return Page(
        task, seed, image, [scale(b) for b in elements], [(k, scale(b)) for k, b in interactive]
    )


def pages(tasks: list[str], seeds: list[int], *, zoom: float = 1.0) -> Iterator[Page]:
    """Each task at each seed, in one headless Chromium at `zoom` device pixels per CSS px."""
    from miniwob.selenium_instance import DEFAULT_BASE_URL  # type: ignore[import-untyped]

    driver = _driver(zoom)
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
                yield _page(driver, task, seed, zoom, "#wrap", _MINIWOB_INTERACTIVE, False)
                driver.execute_script("return core.endEpisode(0);")
    finally:
        driver.quit()


def flight_pages(sites: list[str], *, zoom: float = 1.0) -> Iterator[Page]:
    """Each FormWoB flight site (`AA`, `Alaska`, ...) loaded alone, in each of
    FLIGHT_VIEWS that shows something new (a scroll the page is too short for is
    skipped); the truth is the viewport's visible, reachable interactive elements."""
    import miniwob  # type: ignore[import-untyped]

    root = Path(miniwob.__file__).parent / "html" / "flight"
    driver = _driver(zoom)
    try:
        for site in sites:
            index = root / site / "index.html"
            if not index.exists():
                raise FileNotFoundError(f"miniwob has no flight site {site!r} ({index})")
            for view, (width, height, screens) in enumerate(FLIGHT_VIEWS):
                driver.execute_cdp_cmd(
                    "Emulation.setDeviceMetricsOverride",
                    {"width": width, "height": height, "deviceScaleFactor": zoom, "mobile": False},
                )
                driver.get(index.as_uri())
                driver.execute_async_script(_SETTLED)
                if screens:
                    driver.execute_script(f"window.scrollTo(0, {screens} * innerHeight * 0.9);")
                    if driver.execute_script("return window.scrollY;") == 0:
                        continue
                    driver.execute_async_script(_SETTLED)
                yield _page(driver, site, view, zoom, None, _SITE_INTERACTIVE, True)
    finally:
        driver.quit()


# fonts loaded and two frames drawn since: the page as a user first sees it
_SETTLED = """
const done = arguments[arguments.length - 1];
document.fonts.ready.then(() => requestAnimationFrame(() => requestAnimationFrame(done)));
"""
