"""Headless Chromium driven over the DevTools protocol on a pipe (--remote-debugging-pipe:
the browser reads commands on fd 3 and writes replies on fd 4, NUL-separated JSON), so a
test can open a page, wait on its DOM with a promise and take a screenshot, with no
library and no port. Start at Browser.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.chromium import CHROMIUM_FLAGS

__all__ = ["Browser"]


class Browser:
    """One headless Chromium with a profile in `profile`, one page at a time: open(url),
    wait_for(js) and screenshot(path). Close it (or use `with`)."""

    def __init__(self, profile: Path, *, width: int = 1280, height: int = 900) -> None:
        binary = shutil.which("chromium") or shutil.which("chromium-browser")
        if binary is None:
            pytest.skip("needs Chromium: apt-get install chromium (scripts/setup.sh --dev does)")
        to_browser, self._to = os.pipe()
        self._from, from_browser = os.pipe()
        self._buffer = b""
        self._next = 0
        self._session: str | None = None
        self.width, self.height = width, height

        def on_fds() -> None:  # the child's fd 3 and 4; os.pipe's own are closed on exec
            high_in = fcntl.fcntl(to_browser, fcntl.F_DUPFD, 10)  # above 3 and 4 first
            high_out = fcntl.fcntl(from_browser, fcntl.F_DUPFD, 10)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=on_fds,
        )  # fmt: skip
        os.close(to_browser)
        os.close(from_browser)

    def _send(self, method: str, params: dict[str, Any] | None = None, *, top: bool = False,
              timeout: float = 60.0) -> dict[str, Any]:  # fmt: skip
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if self._session is not None and not top:
            message["sessionId"] = self._session
        os.write(self._to, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == self._next:
                    if "error" in reply:
                        raise AssertionError(f"{method}: {reply['error']}")
                    return dict(reply.get("result", {}))
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from], [], [], left)[0]:
                raise AssertionError(f"Chromium did not answer {method} within {timeout} s")
            chunk = os.read(self._from, 1 << 20)
            if not chunk:
                raise AssertionError(f"Chromium closed its pipe during {method}")
            self._buffer += chunk

    def open(self, url: str) -> None:
        """Open `url` in a new page and wait for its load event."""
        target = self._send("Target.createTarget", {"url": "about:blank"}, top=True)
        attached = self._send(
            "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, top=True
        )
        self._session = attached["sessionId"]
        self._send(
            "Emulation.setDeviceMetricsOverride",
            {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False},
        )
        self._send("Page.enable")
        self._send("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str, timeout: float = 60.0) -> Any:
        """The value of `expression` (a promise is awaited) in the page."""
        found = self._send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
            timeout=timeout + 5,
        )
        if "exceptionDetails" in found:
            raise AssertionError(f"{expression}: {found['exceptionDetails']}")
        return found["result"].get("value")

    def wait_for(self, condition: str, timeout: float = 60.0) -> Any:
        """Wait until the JavaScript `condition` is truthy, checked on each DOM change
        (a MutationObserver and readystatechange, not a timer); its value. AssertionError
        after `timeout`."""
        script = f"""new Promise((resolve, reject) => {{
          const check = () => {{ try {{ return ({condition}); }} catch (e) {{ return false; }} }};
          const now = check();
          if (now) {{ resolve(now); return; }}
          const watcher = new MutationObserver(() => {{
            const value = check();
            if (value) {{ watcher.disconnect(); clearTimeout(timer); resolve(value); }}
          }});
          watcher.observe(document, {{subtree: true, childList: true, characterData: true,
                                      attributes: true}});
          document.addEventListener("readystatechange", () => {{
            const value = check();
            if (value) {{ watcher.disconnect(); clearTimeout(timer); resolve(value); }}
          }});
          const timer = setTimeout(() => {{ watcher.disconnect();
            reject(new Error("not seen within {timeout} s: " + {json.dumps(condition)})); }},
            {int(timeout * 1000)});
        }})"""
        return self.evaluate(script, timeout)

    def screenshot(self, path: Path) -> Path:
        shot = self._send("Page.captureScreenshot", {"format": "png"})
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self._to)
        with contextlib.suppress(OSError):
            os.close(self._from)
        self.process.kill()
        self.process.wait(timeout=30)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
