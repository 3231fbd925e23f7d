"""The HTML report: a session's DAG view as one static, self-contained HTML file.

Owns the page around the DAG view (html.dag_html; templates/session_report.html.j2 of
pages) and writing it where the caller asked, atomically. Used by `openprogram sessions
report` and by agents' report options.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openprogram.core import _secrets
from openprogram.core.dag import ContextDAG
from openprogram.core.values import replace_surrogates
from openprogram.display._payload import DEFAULT_FULL_IMAGE_BUDGET
from openprogram.display.html import dag_html
from openprogram.display.operations import operations_html, session_operations
from openprogram.errors import UsageError
from openprogram.pages import render, trusted, write_page

__all__ = ["report_html", "write_report"]


def _dag_of(source: object) -> tuple[ContextDAG, str | None]:
    if isinstance(source, ContextDAG):
        return source, None
    dag = getattr(source, "dag", None)
    if isinstance(dag, ContextDAG):
        session_id = getattr(source, "id", None)
        return dag, str(session_id) if session_id is not None else None
    raise UsageError(
        f"cannot make a report of {type(source).__name__}; pass a Session or a ContextDAG"
    )


def _operations_panel(source: object, dag: ContextDAG) -> str:
    """The operations panel of a Session with operations (display/operations.py)."""
    if isinstance(source, ContextDAG):
        return ""
    records, events = session_operations(source)
    names = {r.node: f"{dag.node(r.node).name} #{dag.ordinal(r.node)}" for r in records
             if r.node in dag}  # fmt: skip
    return operations_html(records, events, names)


def report_html(
    source: object,
    *,
    title: str | None = None,
    focus: str | None = None,
    facts: Mapping[str, Any] | None = None,
    extra_html: str | None = None,
    thumbnail_px: int = 320,
    full_image_budget: int = DEFAULT_FULL_IMAGE_BUDGET,
) -> str:
    """The report page of a Session or ContextDAG, as a string (see write_report)."""
    dag, session_id = _dag_of(source)
    heading = title or (f"session {session_id}" if session_id else "openprogram run")
    view = dag_html(
        dag,
        focus=focus,
        title=heading,
        facts=facts,
        thumbnail_px=thumbnail_px,
        full_image_budget=full_image_budget,
        styled=False,  # the page's head has the stylesheet
    )
    page = render(
        "session_report.html.j2",
        title=heading,
        kind="op-page",
        extra=trusted(extra_html) if extra_html else None,
        view=trusted(view),
        operations=trusted(_operations_panel(source, dag)),
    )
    return replace_surrogates(_secrets.scrub(page, patterns=False))  # keys never shown


def write_report(
    source: object,
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
    focus: str | None = None,
    facts: Mapping[str, Any] | None = None,
    extra_html: str | None = None,
    thumbnail_px: int = 320,
    full_image_budget: int = DEFAULT_FULL_IMAGE_BUDGET,
) -> Path:
    """Write the HTML report of a Session or ContextDAG to exactly `path`; returns it.

    focus: show only that node's subtree (e.g. one agent run); facts: `{label: value}`
    lines under the heading; extra_html: trusted HTML placed above the tree (e.g. a
    result's `_repr_html_()`); thumbnail_px: the size screenshots show at in the tree;
    full_image_budget: bytes of full-resolution images embedded for the lightbox.
    The file is self-contained (inline CSS, JS and images; no network). It is
    written to a temporary file beside `path` and renamed, so a reader never sees half
    a report. Raises UsageError when the folder does not exist or `path` is a folder.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise UsageError(f"{str(target)!r} is a folder; give a file name such as run.html")
    folder = target.parent
    if not folder.is_dir():
        raise UsageError(f"folder {str(folder)!r} does not exist; create it or pick another path")
    page = report_html(
        source,
        title=title,
        focus=focus,
        facts=facts,
        extra_html=extra_html,
        thumbnail_px=thumbnail_px,
        full_image_budget=full_image_budget,
    )
    return write_page(target, page)
