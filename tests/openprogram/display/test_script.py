"""The view's JavaScript is a file of its own, valid and lint-clean JavaScript, inlined
whole."""

from __future__ import annotations

import os
import shutil
import subprocess
from importlib.resources import files
from pathlib import Path

import pytest

from openprogram.display._script import SCRIPT


def test_the_script_is_view_js_inlined_whole():
    source = files("openprogram.display").joinpath("view.js").read_text("utf-8")

    assert f"<script>{source}</script>" == SCRIPT
    assert "</script" not in source  # would end the element early in a page


@pytest.mark.slow
def test_view_js_parses_as_javascript():
    node = shutil.which("node")
    if node is None:
        pytest.skip("needs Node.js to check the syntax (Chromium runs it in test_browser.py)")
    path = files("openprogram.display").joinpath("view.js")

    result = subprocess.run([node, "--check", str(path)], capture_output=True, text=True)

    assert result.returncode == 0, result.stderr


@pytest.mark.slow
def test_view_js_passes_eslint_recommended():
    eslint = shutil.which("eslint")
    if eslint is None:
        pytest.skip("needs ESLint: apt-get install eslint (scripts/setup.sh --dev does)")
    path = Path(str(files("openprogram.display").joinpath("view.js")))
    config = Path(__file__).with_name("eslint.json")
    # Debian's eslint keeps its modules in /usr/share/nodejs, which Debian's node searches
    # and a NodeSource node does not; it also wants the file named relative to the cwd
    paths = [os.environ.get("NODE_PATH", ""), "/usr/share/nodejs", "/usr/lib/nodejs"]
    env = {**os.environ, "NODE_PATH": os.pathsep.join(p for p in paths if p)}

    result = subprocess.run(
        [eslint, "--no-eslintrc", "-c", str(config), "-f", "unix", path.name],
        cwd=path.parent,
        env=env,
        capture_output=True,
        text=True,
    )

    assert result.returncode == 0, result.stdout + result.stderr
