"""A MiniWoB++ task page in a real, headed Chromium on its own VirtualDesktop.

Owns starting Chromium through chromedriver (selenium) on the episode's private X
display, starting the task with a seed, and reading the page's own instruction and
reward through the `miniwob` package. Acting is the agent's business. Start at
MiniWobPage.
"""

from __future__ import annotations

import difflib
import os
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from gui_harness.desktop.buses import CHROMIUM_ACCESSIBILITY_FLAG
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.errors import DesktopError
from openprogram.echo import echo
from openprogram.errors import ConfigError, UsageError

__all__ = ["MiniWobPage", "miniwob_tasks"]

_INSTALL = 'pip install "openprogram[bench]"'
_CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def _miniwob() -> Any:
    try:
        import miniwob.selenium_instance as instance
    except ImportError as exc:
        raise ImportError(f"MiniWoB++ needs the bench extra: {_INSTALL} ({exc})") from exc
    return instance


@cache
def miniwob_tasks() -> tuple[str, ...]:
    """The names of the MiniWoB++ tasks the installed `miniwob` package ships."""
    html = Path(_miniwob().HTML_DIR) / "miniwob"
    return tuple(sorted(path.stem for path in html.glob("*.html")))


def check_task(name: str) -> str:
    """`name` when MiniWoB++ has such a task, else UsageError naming close ones."""
    tasks = miniwob_tasks()
    if name not in tasks:
        close = difflib.get_close_matches(name, tasks, n=3) if len(name) < 200 else []
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise UsageError(
            f"unknown MiniWoB++ task {echo(name)}{hint} ({len(tasks)} tasks, e.g. click-button; "
            "see gui_harness.bench.miniwob_tasks())"
        )
    return name


def _browser() -> tuple[str, str]:
    binary = os.environ.get("MINIWOB_CHROME_BINARY") or next(
        (found for name in _CHROMIUM if (found := shutil.which(name))), None
    )
    driver = os.environ.get("MINIWOB_CHROMEDRIVER") or shutil.which("chromedriver")
    if not binary or not driver:
        raise ConfigError(
            f"MiniWoB++ needs Chromium and chromedriver (found browser={binary!r}, "
            f"driver={driver!r}): apt-get install chromium chromium-driver, or set "
            "MINIWOB_CHROME_BINARY and MINIWOB_CHROMEDRIVER"
        )
    return binary, driver


class MiniWobPage:
    """MiniWoB++ task `task` with `seed`, open in Chromium on a private Xvfb screen.

    Use it as a context manager: entering starts the VirtualDesktop (`size` pixels) and
    Chromium in app mode at `zoom` device pixels per CSS pixel (MiniWoB's 160-pixel
    widgets are small), and starts the episode. `time_limit_s` replaces the page's
    10-second episode limit, which no model that plans by API calls can meet; the
    reward used is the raw one, not scaled by time. The page is the judge: `done` and
    `reward` come from its own globals through miniwob's reward processor.
    """

    def __init__(
        self,
        task: str,
        seed: int = 0,
        *,
        size: tuple[int, int] = (480, 480),
        zoom: float = 2.0,
        time_limit_s: float | None = 300.0,
    ) -> None:
        self.task = check_task(task)
        self.seed = seed
        self.zoom = zoom
        self.time_limit_s = time_limit_s
        self.desktop = VirtualDesktop(size)
        self._instance: Any = None
        self.utterance = ""
        """The instruction, as the page shows it."""
        self.fields: dict[str, str] = {}
        """The instruction's fields (miniwob's extractor), e.g. {"target": "OK"}."""

    def __repr__(self) -> str:
        return f"MiniWobPage({self.task!r}, seed={self.seed!r})"

    def __enter__(self) -> MiniWobPage:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def driver(self) -> Any:
        """The selenium WebDriver (for readers of the DOM, such as the oracle)."""
        if self._instance is None:
            raise DesktopError(f"{self!r} is not open; use it in a with block")
        return self._instance.driver

    def start(self) -> None:
        """Start the desktop, Chromium and the episode; stop everything on failure."""
        binary, driver = _browser()
        self.desktop.start()
        try:
            self._instance = _instance_class()(self.task, self.desktop, binary, driver, self.zoom)
            self._instance.create_driver()
            if self.time_limit_s is not None:
                self.driver.execute_script(
                    f"core.EPISODE_MAX_TIME = {int(self.time_limit_s * 1000)};"
                )
            self._instance.begin_task(seed=self.seed)
            observation, _ = self._instance.get_observation(use_cached_fields=False)
        except BaseException:
            self.close()
            raise
        self.utterance = str(observation["utterance"])
        self.fields = dict(observation["fields"])

    def close(self) -> None:
        """Quit Chromium and chromedriver, then stop the desktop."""
        if self._instance is not None and hasattr(self._instance, "driver"):
            self._instance.close()
        self._instance = None
        self.desktop.close()

    def metadata(self) -> dict[str, Any]:
        """The page's episode state: done, raw_reward, env_reward and reason."""
        if self._instance is None:
            raise DesktopError(f"{self!r} is not open; use it in a with block")
        return dict(self._instance.get_metadata())

    @property
    def done(self) -> bool:
        """Whether the page ended the episode (answered, or timed out)."""
        return bool(self.metadata()["done"])

    def reward(self) -> float:
        """The page's raw reward (-1 to 1; 0 while the episode runs), via miniwob."""
        from miniwob.reward import get_raw_reward

        reward: float = get_raw_reward(self.metadata())
        return reward

    def box(self, element: Any) -> tuple[int, int, int, int]:
        """Where a DOM element is on the screen: (x, y, width, height) in screen pixels."""
        rect = self.driver.execute_script(
            "const r = arguments[0].getBoundingClientRect();"
            "return [r.left, r.top, r.width, r.height, window.devicePixelRatio,"
            " window.screenX + window.outerWidth - window.innerWidth,"
            " window.screenY + window.outerHeight - window.innerHeight];",
            element,
        )
        left, top, width, height, ratio, origin_x, origin_y = (float(v) for v in rect)
        return (
            round((origin_x + left) * ratio),
            round((origin_y + top) * ratio),
            round(width * ratio),
            round(height * ratio),
        )


@cache
def _instance_class() -> type:
    """miniwob's SeleniumInstance, started on our display with our Chromium: the package
    runs `webdriver.Chrome` on whatever DISPLAY the process has and lets selenium fetch
    a driver from the network, neither of which works for a private Xvfb offline."""
    base = _miniwob().SeleniumInstance

    class _Instance(base):  # type: ignore[misc, valid-type]
        def __init__(
            self, task: str, desktop: VirtualDesktop, binary: str, driver: str, zoom: float
        ) -> None:
            super().__init__(0, task, headless=False)
            self._desktop = desktop
            self._display = desktop.display
            self._size = desktop.size
            self._binary, self._driver_path, self._zoom = binary, driver, zoom

        def create_driver(self) -> None:
            from selenium import webdriver
            from selenium.common.exceptions import WebDriverException
            from selenium.webdriver.chrome.service import Service

            options = webdriver.ChromeOptions()
            options.binary_location = self._binary
            width, height = self._size
            for argument in (
                f"--app={self.url}",
                "--no-sandbox",  # Chromium refuses to run as root with its sandbox
                "--no-first-run",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--password-store=basic",
                "--window-position=0,0",
                f"--window-size={int(width / self._zoom)},{int(height / self._zoom)}",
                f"--force-device-scale-factor={self._zoom}",
                # the page's elements on the desktop's AT-SPI bus, for perception's tree
                CHROMIUM_ACCESSIBILITY_FLAG,
            ):
                options.add_argument(argument)
            # no "Chrome is being controlled by automated software" bar over the page
            options.add_experimental_option("excludeSwitches", ["enable-automation"])
            # the desktop's environment: its DISPLAY and its accessibility bus
            service = Service(self._driver_path, env=self._desktop.app_env())
            try:
                self.driver = webdriver.Chrome(service=service, options=options)
            except WebDriverException as exc:
                raise DesktopError(
                    f"Chromium did not start on {self._display}: {exc.msg or exc}"
                ) from exc
            self.driver.implicitly_wait(0)
            self.inner_width, self.inner_height = self.driver.execute_script(
                "return [window.innerWidth, window.innerHeight];"
            )

    return _Instance
