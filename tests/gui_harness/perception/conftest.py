"""Fixtures for the perception tests: the synthetic form and its ground truth."""

from __future__ import annotations

import pytest
from PIL import Image

from tests.gui_harness.perception.screens import Truth, form_screen


@pytest.fixture(scope="session")
def form() -> tuple[Image.Image, list[Truth]]:
    """The 1280×800 synthetic settings form (do not draw on it) and its truths."""
    return form_screen()
