"""The view's JavaScript is a file of its own, valid JavaScript, inlined whole."""

from __future__ import annotations

import shutil
import subprocess
from importlib.resources import files

import pytest

from openprogram.display._script import SCRIPT


def test_the_script_is_view_js_inlined_whole():
    source = files("openprogram.display").joinpath("view.js").read_text("utf-8")

    assert f"<script>{source}</script>" == SCRIPT
    assert "</script" not in source  # would end the element early in a page


def test_view_js_parses_as_javascript():
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js to check the syntax (Chromium runs it in test_browser.py)")
    path = files("openprogram.display").joinpath("view.js")

    result = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr
