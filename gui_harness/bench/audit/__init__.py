"""The perception audit (issue 41): real apps driven through their own menus and dialogs,
every screen checked against the invariants every observation keeps (DESIGN.md §8) with
no list of expected controls. benchmarks/audit/ runs it over the apps it installs."""

from gui_harness.bench.audit.explore import AppResult, audit_app, perception_for
from gui_harness.bench.audit.invariants import INVARIANTS, Finding, ScreenCheck, check_screen
from gui_harness.bench.audit.report import summarise

__all__ = [
    "INVARIANTS",
    "AppResult",
    "Finding",
    "ScreenCheck",
    "audit_app",
    "check_screen",
    "perception_for",
    "summarise",
]
