"""What one model call sees: render_context and the pieces it is built from.

Start at render.py (DESIGN.md §4); _walk.py applies the visibility rules, _history.py
and _messages.py turn the visible nodes into chat messages, _compact.py fits them to a
token budget. Pure: reads the DAG, never writes it.
"""

from .render import RenderedContext, recorded_report, render_context, seen_by

__all__ = ["RenderedContext", "recorded_report", "render_context", "seen_by"]
