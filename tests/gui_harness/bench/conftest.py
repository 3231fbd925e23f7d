"""MiniWoB++ tests need the bench extra, Xvfb, Chromium and chromedriver; they skip,
saying which is missing, without them (scripts/setup.sh --dev installs all of them).
The desktop suite's tests (test_desktop*.py) and the conformance suite's
(test_conformance.py) need no bench extra."""

from __future__ import annotations

import shutil

import pytest


def needs_miniwob() -> list[pytest.MarkDecorator]:
    return [
        pytest.mark.x11,
        pytest.mark.browser,
        pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
        pytest.mark.skipif(
            shutil.which("chromedriver") is None, reason="chromedriver is not installed"
        ),
    ]


@pytest.fixture(autouse=True)
def _miniwob_installed(request: pytest.FixtureRequest) -> None:
    name = request.module.__name__.rsplit(".", 1)[-1]
    if name.startswith("test_desktop") or name == "test_conformance":
        return
    pytest.importorskip("miniwob", reason='needs pip install "openprogram[bench]"')
