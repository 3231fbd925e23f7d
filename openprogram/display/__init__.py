"""Seeing a run: notebook views, the HTML report, what one llm call saw, and exports."""

from openprogram.display.calls import (
    CallView,
    DiffLine,
    HiddenCode,
    HiddenGroup,
    HiddenNode,
    context_diff,
    group_hidden,
    hidden_nodes,
    previous_call,
    rebuild_context,
)
from openprogram.display.export import (
    ExportFormat,
    to_dot,
    to_graphml,
    to_json,
    to_mermaid,
    to_networkx,
    write_export,
)
from openprogram.display.html import call_html, context_html, dag_html, node_html
from openprogram.display.report import report_html, write_report

__all__ = [
    "CallView",
    "DiffLine",
    "ExportFormat",
    "HiddenCode",
    "HiddenGroup",
    "HiddenNode",
    "call_html",
    "context_diff",
    "context_html",
    "dag_html",
    "group_hidden",
    "hidden_nodes",
    "node_html",
    "previous_call",
    "rebuild_context",
    "report_html",
    "to_dot",
    "to_graphml",
    "to_json",
    "to_mermaid",
    "to_networkx",
    "write_export",
    "write_report",
]
