"""A local page in a headed Chromium on a VirtualDesktop: `page_app()` and `CLICK_PAGE`.

For the tests and benchmarks that click a page and read its accessibility tree without
chromedriver (the VirtualDesktop adds the accessibility switch). Start at page_app().
"""

from __future__ import annotations

import os
from pathlib import Path

from gui_harness.desktop.virtual import App
from tests.support.miniwob_page import chromium_binary

__all__ = ["CLICK_PAGE", "page_app"]

CLICK_PAGE = """<!doctype html><html><body style="font-size:20px">
<label><input type="checkbox"> Subscribe</label>
<p><button onclick="toggle(this)">Save</button></p>
<script>
function toggle(button) { button.textContent = button.textContent == "Save" ? "Saved" : "Save"; }
</script>
</body></html>"""
"""A checkbox "Subscribe" and a button whose name toggles between "Save" and "Saved"."""


def page_app(html: str, folder: Path) -> App:
    """Chromium showing `html` (written into `folder`, beside a fresh profile) in a
    600×400 app window at the top-left of the screen."""
    page = folder / "page.html"
    page.write_text(html)
    binary = chromium_binary()
    if binary is None:
        raise FileNotFoundError("Chromium is not installed (apt-get install chromium)")
    argv = [binary, *(["--no-sandbox"] if os.geteuid() == 0 else [])]
    argv += [
        "--no-first-run",
        "--disable-gpu",
        "--disable-extensions",
        "--password-store=basic",
        f"--user-data-dir={folder / 'profile'}",
        "--window-position=0,0",
        "--window-size=600,400",
        f"--app={page.as_uri()}",
    ]
    return App(argv=argv, timeout=90)
