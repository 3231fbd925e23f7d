"""The script every DAG view inlines, read once from view.js (shipped as package data).

The JavaScript lives in its own file so it can be read, edited and checked as
JavaScript; this module only wraps it in a <script> element. See view.js for what it does.
"""

from __future__ import annotations

from importlib.resources import files

__all__ = ["SCRIPT"]

SCRIPT = (
    "<script>" + files("openprogram.display").joinpath("view.js").read_text("utf-8") + "</script>"
)
"""The view's <script> element; `%ID%` stands for the view's element id."""
