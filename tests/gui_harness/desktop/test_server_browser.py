"""A web page in real headless Chromium, served from another localhost origin, tries to
drive the desktop server (issue 9: two no-cors POSTs used to type on the desktop)."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from gui_harness.actions import Click
from gui_harness.desktop.fake import FakeDesktop
from gui_harness.desktop.server import serve_desktop
from tests.support.chromium import CHROMIUM_FLAGS

pytestmark = pytest.mark.browser


# Every way a page can send a POST without the user: no-cors fetches (JSON as text/plain,
# as a form would send it), a beacon, and a CORS fetch that even knows the token.
_ATTACK = """<!doctype html><title>cat pictures</title><pre id="out">running</pre>
<script>
const target = "%(url)s/v1/execute";
const body = JSON.stringify({version: 1, action: {type: "type", text: "pwned"}});
const tries = [
  ["no-cors", {method: "POST", mode: "no-cors", body}],
  ["no-cors text/plain", {method: "POST", mode: "no-cors", body,
                          headers: {"Content-Type": "text/plain"}}],
  ["cors with the token", {method: "POST", body, headers: {
      "Content-Type": "application/json", "Authorization": "Bearer %(token)s"}}],
  ["no-cors screenshot", {mode: "no-cors"}, "%(url)s/v1/screenshot"],
];
(async () => {
  const results = {beacon: navigator.sendBeacon(target, body)};
  for (const [name, options, url] of tries) {
    try {
      const reply = await fetch(url || target, options);
      results[name] = "answered " + reply.type + " " + reply.status;
    } catch (error) {
      results[name] = "failed " + error.name;
    }
  }
  document.getElementById("out").textContent = "RESULTS" + JSON.stringify(results) + "END";
})();
</script>"""


class _Page(BaseHTTPRequestHandler):
    html = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.html)))
        self.end_headers()
        self.wfile.write(self.html)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def chromium(tmp_path: Path):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("needs Chromium: apt-get install chromium (scripts/setup.sh --dev does)")

    def dump_dom(url: str) -> str:
        result = subprocess.run(
            [
                binary,
                *CHROMIUM_FLAGS,
                f"--user-data-dir={tmp_path / 'profile'}",
                "--virtual-time-budget=20000",  # let the page's fetches finish first
                "--dump-dom",
                url,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    return dump_dom


def test_a_page_from_another_localhost_origin_cannot_type_on_the_desktop(chromium, caplog):
    caplog.set_level(logging.WARNING, logger="gui_harness.desktop.server")
    fake = FakeDesktop.demo_form()
    fake.execute(Click(x=200, y=75))  # the name field has the focus: typing would land
    fake.actions.clear()
    with serve_desktop(fake) as server:
        page_class = type("Page", (_Page,), {})
        page_class.html = (_ATTACK % {"url": server.url, "token": server.token}).encode()
        with ThreadingHTTPServer(("127.0.0.1", 0), page_class) as page_server:
            Thread(target=page_server.serve_forever, daemon=True).start()
            try:
                dom = chromium(f"http://127.0.0.1:{page_server.server_address[1]}/")
            finally:
                page_server.shutdown()

    results = json.loads(dom.split("RESULTS", 1)[1].split("END", 1)[0].replace("&amp;", "&"))
    assert results["beacon"] is True  # the browser did send it
    assert results["no-cors"] == "answered opaque 0"
    assert results["cors with the token"] == "failed TypeError"  # its preflight was refused
    assert fake.actions == [] and fake.state()["name"] == ""
    origin = f"http://127.0.0.1:{page_server.server_address[1]}"
    refusals = sorted(
        r.getMessage().split(" from ")[0] + (" Origin" if origin in r.getMessage() else "")
        for r in caplog.records
        if "requests from web pages are refused" in r.getMessage()
    )
    # each request reached the server and was refused as a browser's: the beacon and two
    # no-cors POSTs and the preflight by their Origin, the GET (no Origin) by Sec-Fetch-Site
    assert refusals == [
        "answered 403 to 'GET /v1/screenshot HTTP/1.1'",
        "answered 403 to 'OPTIONS /v1/execute HTTP/1.1' Origin",
        *["answered 403 to 'POST /v1/execute HTTP/1.1' Origin"] * 3,
    ]
