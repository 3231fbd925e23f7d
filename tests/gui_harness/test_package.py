"""The gui_harness package root: its public names are pinned."""

import gui_harness


def test_package_root_exports_are_pinned():
    assert set(gui_harness.__all__) == {
        "gui_agent", "GuiResult", "StopReason", "gui_step", "observe", "verify_step",
        "plan_next_action", "dispatch_action", "conclusion", "Desktop", "VirtualDesktop",
        "App", "X11Desktop", "FakeDesktop", "RemoteDesktop", "serve_desktop", "Action",
        "Click", "DoubleClick", "TripleClick", "MouseDown", "MouseUp", "Move", "Drag", "Scroll",
        "Type", "Keypress", "KeyDown", "KeyUp", "Wait", "Done",
        "Fail", "normalize_action", "resolve", "Transform", "Policy", "Perception",
        "Observation", "ComponentMemory", "AccessibilitySource", "InvalidAction",
        "ActionRejected", "DesktopError", "DesktopTimeout", "DesktopAuthError",
        "current_observation", "observe_screen", "look", "ask_for_action",
        "latest_verification", "latest_outcome", "current_prompts", "Prompts",
    }  # fmt: skip
    for name in gui_harness.__all__:
        assert hasattr(gui_harness, name)


def test_openprogram_never_imports_gui_harness():
    import subprocess
    import sys

    code = "import sys, openprogram, openprogram.cli; print('gui_harness' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_demo_app_and_a_desktop_load_neither_the_agent_nor_opencv():
    """The package root's names load on first use: the demo app's process (started for
    every demo and for a hundred tests) imported the agent, perception and OpenCV with
    the root, a second of CPU it never used, and needs Tk only (not Xlib or PIL); a
    desktop loads no agent either; `from gui_harness import Click` still works."""
    import subprocess
    import sys

    code = (
        "import sys, gui_harness.demo.app\n"
        "heavy = ('gui_harness.agent', 'gui_harness.perception', 'cv2', 'openprogram.agentic',"
        " 'Xlib', 'PIL')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
        "import gui_harness.desktop.virtual\n"
        "print(sorted(m for m in heavy[:4] if m in sys.modules))\n"
        "from gui_harness import Click, gui_agent\n"
        "print(Click.__module__, 'gui_harness.agent' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == ["[]", "[]", "gui_harness.actions True"]
