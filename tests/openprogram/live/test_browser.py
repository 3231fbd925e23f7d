"""A session's page in headless Chromium, opened with the token the server printed: a
call another process records shows up, in the feed and in display's DAG view, without
a reload (the page's EventSource), on SQLite and PostgreSQL. Waits are on the DOM.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image as PILImage

from tests.support.cdp import Browser

pytestmark = pytest.mark.browser

_ROWS = "[...document.querySelectorAll('#op-view .opv-name')].map(e => e.textContent)"


def test_a_call_recorded_by_another_process_appears_live(
    durable_store, recorder, serve, tell, tmp_path: Path
) -> None:
    server = serve(durable_store)
    page = f"{server.origin}/session/live?token={server.token}"
    with Browser(tmp_path / "profile") as browser:
        browser.open(server.url)
        assert (
            browser.wait_for("document.querySelector('tr[data-session=\"live\"] a')?.textContent")
            == "live"
        )
        browser.open(page)
        browser.wait_for("document.getElementById('op-conn').textContent === 'live'")
        before = browser.evaluate(_ROWS)
        assert not any(name.startswith("appeared_live") for name in before)

        tell(recorder, "7")  # committed by the child when this returns

        fed = browser.wait_for(
            "[...document.querySelectorAll('#op-feed li[data-status=completed]')]"
            ".map(e => e.textContent).find(t => t.includes('appeared_live'))"
        )
        assert fed.endswith("code appeared_live completed")
        rows = browser.wait_for(
            f"{_ROWS}.filter(t => t.startsWith('appeared_live')).length > 0 && {_ROWS}"
        )
        assert "appeared_live #1" in rows and "steps #1" in rows
        assert (
            browser.evaluate("performance.getEntriesByType('navigation').length") == 1
        )  # no reload

        tell(recorder, "8")
        browser.wait_for(f"{_ROWS}.includes('appeared_live #2')")
        shot = browser.screenshot(tmp_path / "live.png")
    image = PILImage.open(shot).convert("RGB")
    assert image.size == (1280, 900)
    assert len(image.getcolors(maxcolors=1 << 16) or []) > 50  # text and dots, not blank
    tell(recorder, "end")
