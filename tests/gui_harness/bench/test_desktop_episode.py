"""A desktop episode's evaluator reads the apps' trees as gui_agent's perception does:
placed and cut by the desktop's windows (a GTK 4 app reports its boxes relative to its
window, whose content starts inside its frame's shadow), on the suite's GTK 4 panel."""

from __future__ import annotations

import time

from gui_harness.bench.desktop import DesktopEpisode
from gui_harness.bench.desktop_spec import load_desktop_task, suite_dir
from gui_harness.perception import AccessibilitySource
from tests.support.toolkits import GTK4

pytestmark = GTK4


def _shown(components) -> dict[str | None, tuple[int, int, int, int]]:
    return {c.label: c.box for c in components if c.kind == "tab" or c.label == "Actions"}


def test_the_evaluator_sees_gtk4_boxes_where_gui_agent_does():
    task = load_desktop_task(suite_dir() / "gtk4-history-tab.json")
    with DesktopEpisode(task) as episode:
        desktop = episode.desktop
        assert desktop is not None
        # as gui_agent's perception reads the trees (agent._accessibility)
        agent = AccessibilitySource(
            desktop.accessibility_bus,
            screen=desktop.size,
            timeout=3.0,
            windows=lambda: desktop.desktop.visible_windows(),
        )
        try:
            deadline = time.monotonic() + 60
            while "History" not in _shown(episode.components()) and time.monotonic() < deadline:
                time.sleep(0.2)
            evaluated = _shown(episode.components())
            assert "History" in evaluated
            assert evaluated == _shown(agent.snapshot().components)
        finally:
            agent.close()
