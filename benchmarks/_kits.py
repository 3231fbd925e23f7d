"""Pages built from UI component kits (Bootstrap, Bulma, Shoelace, MUI, Pico, UIkit) for
bench_perception.py --kits: served on localhost, rendered in headless Chromium, with the
DOM boxes of their clickable elements as the truth.

The page sources are benchmarks/kit_pages/<set>/*.html; the kits' files come from npm,
installed by `scripts/setup.sh --dev` into .cache/npm-kits (git-ignored) and served
under /kits/. Shoelace's controls live in shadow roots: their visible part is the truth.
"""

from __future__ import annotations

import functools
import http.server
import io
import threading
from collections.abc import Iterator
from pathlib import Path

from PIL import Image

from tests.gui_harness.perception.miniwob_pages import _SETTLED, Page, _driver

ROOT = Path(__file__).resolve().parents[1]
PAGES = ROOT / "benchmarks" / "kit_pages"
KITS = ROOT / ".cache" / "npm-kits" / "node_modules"
VIEWPORT = (1280, 800)

# what a user clicks or types into; a label counts only for a control not drawn itself
# (MUI hides its check box's input and draws a span), a shadow host by its visible part
_COLLECT = """
const interactive = "input:not([type=hidden]), button, select, textarea, a[href], summary,"
  + " [role=button], [role=tab], [role=link], [role=checkbox], [role=radio], [role=switch],"
  + " [role=menuitem], [role=option], [role=combobox], label, .tabs a, .pagination-link,"
  + " .pagination-previous, .pagination-next";
const shadowParts = {"SL-BUTTON": "[part~=base]", "SL-INPUT": "[part~=base]",
  "SL-TEXTAREA": "[part~=base]", "SL-SELECT": "[part~=combobox]", "SL-CHECKBOX": "[part~=base]",
  "SL-SWITCH": "[part~=base]", "SL-RADIO-BUTTON": "[part~=button]", "SL-TAB": "[part~=base]"};
function visible(e) {
  const s = getComputedStyle(e);
  if (s.visibility === 'hidden' || s.display === 'none' || !(parseFloat(s.opacity) > 0))
    return false;
  return e.checkVisibility({opacityProperty: true, visibilityProperty: true});
}
function clip(r) {
  const x0 = Math.max(r.left, 0), y0 = Math.max(r.top, 0);
  const x1 = Math.min(r.right, innerWidth), y1 = Math.min(r.bottom, innerHeight);
  if (x1 - x0 < 3 || y1 - y0 < 3) return null;
  return [Math.round(x0), Math.round(y0), Math.round(x1 - x0), Math.round(y1 - y0)];
}
function reachable(host, e, box) {
  const [x, y, w, h] = box;
  for (const [fx, fy] of [[0.5, 0.5], [0.25, 0.5], [0.75, 0.5], [0.5, 0.25], [0.5, 0.75]]) {
    const hit = document.elementFromPoint(x + w * fx, y + h * fy);
    if (hit && (hit === host || host.contains(hit) || (hit.control && hit.control === e)))
      return true;
  }
  return false;
}
function standsIn(e) {
  if (e.tagName !== 'LABEL') return true;
  const control = e.control;
  return !!control && (!visible(control) || !clip(control.getBoundingClientRect()));
}
const clickable = [];
for (const e of document.querySelectorAll('body *')) {
  let target = e;
  if (shadowParts[e.tagName]) {
    target = e.shadowRoot && e.shadowRoot.querySelector(shadowParts[e.tagName]);
    if (!target) continue;
  } else if (!e.matches(interactive) || !standsIn(e)) continue;
  if (!visible(e) || !visible(target)) continue;
  const box = clip(target.getBoundingClientRect());
  if (!box || !reachable(e, target, box)) continue;
  clickable.push([e.tagName.toLowerCase() + (e.type ? ':' + e.type : ''), box]);
}
return clickable;
"""


def kit_pages(folder: str) -> Iterator[Page]:
    """Each page of benchmarks/kit_pages/`folder`, at a 1280×800 viewport: its
    screenshot and its clickable elements (the truth)."""
    if not KITS.is_dir():
        raise FileNotFoundError(f"{KITS} is missing: run scripts/setup.sh --dev")
    names = sorted((PAGES / folder).glob("*.html"))
    server = _serve()
    driver = _driver(1.0)
    try:
        driver.execute_cdp_cmd(
            "Emulation.setDeviceMetricsOverride",
            {"width": VIEWPORT[0], "height": VIEWPORT[1], "deviceScaleFactor": 1, "mobile": False},
        )
        port = server.server_address[1]
        for index, page in enumerate(names):
            driver.get(f"http://127.0.0.1:{port}/{folder}/{page.name}")
            driver.execute_async_script(_DEFINED)
            driver.execute_async_script(_SETTLED)
            clickable = driver.execute_script(_COLLECT)
            shot = Image.open(io.BytesIO(driver.get_screenshot_as_png())).convert("RGB")
            yield Page(page.stem, index, shot, [], [(kind, tuple(box)) for kind, box in clickable])
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()


# web components defined and their first render done (Shoelace's autoloader is async)
_DEFINED = """
const done = arguments[arguments.length - 1];
const waiting = [...new Set([...document.querySelectorAll(':not(:defined)')]
  .map(e => e.localName))].map(name => customElements.whenDefined(name));
Promise.all(waiting).then(() => setTimeout(done, 300));
"""


class _Handler(http.server.SimpleHTTPRequestHandler):
    def translate_path(self, path: str) -> str:
        path = path.split("?", 1)[0]
        if path.startswith("/kits/"):
            return str(KITS / path.removeprefix("/kits/"))
        return str(PAGES / path.lstrip("/"))

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve() -> http.server.ThreadingHTTPServer:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Handler))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server
