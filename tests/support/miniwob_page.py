"""A MiniWoB++ task page in a real, headed Chromium on a VirtualDesktop, with its DOM.

Chromium is started as an ordinary app of the desktop (so the desktop's accessibility
set-up applies as it would for a user's app); chromedriver then attaches to it through
the DevTools port only to start the episode and to read DOM boxes as the truth. Used by
the Chromium perception tests and benchmarks/bench_accessibility.py.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gui_harness.desktop.virtual import App

__all__ = ["INTERACTIVE_JS", "DomElement", "MiniWobPage", "chromium_binary", "task_html"]

_WINDOW = (600, 500)

INTERACTIVE_JS = r"""
const selector = 'button, input:not([type=hidden]), select, textarea, a[href], [role=button],'
  + ' [role=tab], [role=link], [role=checkbox], [role=radio], [role=option], [role=menuitem]';
const dx = window.screenX + (window.outerWidth - window.innerWidth) / 2;
const dy = window.screenY + (window.outerHeight - window.innerHeight);
const found = [];
for (const e of document.querySelectorAll(selector)) {
  const r = e.getBoundingClientRect();
  const style = getComputedStyle(e);
  if (r.width < 2 || r.height < 2 || style.visibility === 'hidden' || style.display === 'none')
    continue;
  if (r.right <= 0 || r.bottom <= 0 || r.left >= innerWidth || r.top >= innerHeight) continue;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  if (hit === null || !(hit === e || e.contains(hit) || hit.contains(e) || hit.htmlFor === e.id
      || (hit.tagName === 'LABEL' && hit.contains(e)))) continue;  // covered by something else
  let label = e.getAttribute('aria-label') || '';
  if (!label && (e.type === 'checkbox' || e.type === 'radio')) {
    const owner = e.closest('label') || (e.id && document.querySelector(`label[for="${e.id}"]`));
    label = owner ? owner.textContent : '';
  } else if (!label && e.tagName === 'INPUT' && (e.type === 'button' || e.type === 'submit')) {
    label = e.value;
  } else if (!label && !['INPUT', 'TEXTAREA', 'SELECT'].includes(e.tagName)) {
    label = e.textContent;
  }
  found.push({tag: e.tagName.toLowerCase(), type: e.type || '', role: e.getAttribute('role') || '',
              label: label.replace(/\s+/g, ' ').trim(),
              box: [Math.round(r.left + dx), Math.round(r.top + dy),
                    Math.round(r.width), Math.round(r.height)]});
}
return found;
"""


@dataclass(frozen=True)
class DomElement:
    """One visible interactive DOM element: its tag, type, role, label and screen box."""

    tag: str
    type: str
    role: str
    label: str
    box: tuple[int, int, int, int]


def chromium_binary() -> str | None:
    """The Chromium on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


def task_html(task: str) -> Path:
    """The HTML file of MiniWoB++ task `task` (e.g. "click-button") from PyPI `miniwob`."""
    import miniwob

    path = Path(miniwob.__file__).parent / "html" / "miniwob" / f"{task}.html"
    if not path.exists():
        raise FileNotFoundError(f"MiniWoB++ has no task {task!r} (no {path})")
    return path


class MiniWobPage:
    """Chromium showing MiniWoB++ `task` at the top-left of a screen, episode `seed`.

    Pass `app` to a VirtualDesktop, then call attach() to start the episode. The argv
    carries no accessibility switch: the desktop adds what Chromium needs.
    """

    def __init__(self, task: str, seed: int) -> None:
        self.task, self.seed = task, seed
        self._profile = tempfile.TemporaryDirectory(
            prefix="miniwob-chromium-", ignore_cleanup_errors=True
        )
        self.driver: Any = None
        binary = chromium_binary()
        if binary is None:
            raise FileNotFoundError("Chromium is not installed (apt-get install chromium)")
        argv = [binary]
        if os.geteuid() == 0:
            argv.append("--no-sandbox")  # Chromium refuses to run as root with its sandbox
        argv += [
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--password-store=basic",
            f"--user-data-dir={self._profile.name}",
            "--remote-debugging-port=0",
            "--window-position=0,0",
            f"--window-size={_WINDOW[0]},{_WINDOW[1]}",
            f"--app={task_html(task).as_uri()}",
        ]
        self.app = App(argv=argv, timeout=90)

    def attach(self) -> None:
        """Connect chromedriver to the running Chromium and start the episode."""
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        port_file = Path(self._profile.name) / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if time.monotonic() > deadline:
                raise TimeoutError(f"Chromium wrote no {port_file} within 60 s")
            time.sleep(0.05)
        port = int(port_file.read_text().split()[0])
        options = webdriver.ChromeOptions()
        options.debugger_address = f"127.0.0.1:{port}"
        driver_path = shutil.which("chromedriver") or "/usr/bin/chromedriver"
        service = Service(executable_path=driver_path, env=dict(os.environ))
        self.driver = webdriver.Chrome(service=service, options=options)
        self.driver.execute_script(f"Math.seedrandom({self.seed!r}); core.startEpisodeReal();")

    def elements(self) -> list[DomElement]:
        """The visible, uncovered interactive elements, boxes in screen pixels."""
        return [
            DomElement(e["tag"], e["type"], e["role"], e["label"], tuple(e["box"]))
            for e in self.driver.execute_script(INTERACTIVE_JS)
        ]

    def utterance(self) -> str:
        """The task's instruction as the page shows it."""
        return str(
            self.driver.execute_script("return document.getElementById('query').textContent")
        )

    def reward(self) -> float:
        """The episode's reward so far (MiniWoB++'s own)."""
        return float(self.driver.execute_script("return WOB_REWARD_GLOBAL;"))

    def close(self) -> None:
        """Detach chromedriver (Chromium itself stops with its desktop)."""
        if self.driver is not None:
            self.driver.service.stop()
            self.driver = None
        self._profile.cleanup()
