"""Accessibility switched on for every toolkit a VirtualDesktop launches (issue 41, item
2): Java Swing through Debian's ATK wrapper, wxWidgets, Firefox — each a real app whose
controls must come from its tree — and the environment that does it."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gui_harness.desktop.buses import (
    ACCESSIBILITY_ENV,
    JAVA_ATK_WRAPPER,
    SessionBus,
    java_accessibility_options,
)
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import AccessibilitySource
from tests.support.toolkits import ACCESSIBLE

NOTEPAD = Path("/usr/lib/jvm/java-17-openjdk-amd64/demo/jfc/Notepad/Notepad.jar")
SYSTEM_PYTHON = Path("/usr/bin/python3")


def _java_has_wrapper() -> bool:
    """Whether the JDK of the `java` on PATH has the wrapper's native half (Debian's)."""
    java = shutil.which("java")
    home = Path(java).resolve().parent.parent if java else None
    return home is not None and (home / "lib" / "libatk-wrapper.so").exists()


def accessible(test):  # type: ignore[no-untyped-def]
    """`test` with the marks of a test that reads apps' trees (tests/support/toolkits.py)."""
    for mark in ACCESSIBLE:
        test = mark(test)
    return test


def _tree_labels(desktop: VirtualDesktop, wanted: set[str], timeout: float = 60.0) -> set[str]:
    """The labels of the accessibility components, once all of `wanted` are among them
    or `timeout` seconds passed (an app publishes its tree a while after its window)."""
    source = AccessibilitySource(desktop.accessibility_bus, screen=desktop.size, timeout=5.0)
    try:
        deadline = time.monotonic() + timeout
        labels: set[str] = set()
        while time.monotonic() < deadline:
            labels = {c.label or "" for c in source.snapshot().components}
            if wanted <= labels:
                break
            time.sleep(0.5)
        return labels
    finally:
        source.close()


def test_the_java_options_name_the_wrapper_only_where_it_is_installed(tmp_path):
    assert ACCESSIBILITY_ENV["GNOME_ACCESSIBILITY"] == "1"
    assert java_accessibility_options(str(tmp_path / "no.jar")) is None
    jar = tmp_path / "wrapper.jar"
    jar.write_bytes(b"PK")
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("")
    assert java_accessibility_options(str(jar), java=str(home / "bin" / "java")) is None
    (home / "lib").mkdir()
    (home / "lib" / "libatk-wrapper.so").write_text("")
    options = java_accessibility_options(str(jar), java=str(home / "bin" / "java"))
    assert options is not None
    assert "assistive_technologies=org.GNOME.Accessibility.AtkWrapper" in options
    assert f"-Xbootclasspath/a:{jar}" in options


@accessible
@pytest.mark.skipif(java_accessibility_options() is None, reason="no ATK wrapper for java")
def test_an_apps_environment_keeps_the_callers_java_options(monkeypatch):
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-Xmx64m")
    bus = SessionBus(":0")
    assert "AtkWrapper" in bus.env["JAVA_TOOL_OPTIONS"]
    with VirtualDesktop((320, 240), window_manager=False) as desktop:
        if desktop.accessibility_bus is None:
            pytest.skip(desktop.accessibility_note or "no accessibility bus")
        options = desktop.app_env()["JAVA_TOOL_OPTIONS"]
    assert options.startswith("-Xmx64m ") and JAVA_ATK_WRAPPER in options


@accessible
@pytest.mark.skipif(
    not NOTEPAD.exists() or not Path(JAVA_ATK_WRAPPER).exists() or not _java_has_wrapper(),
    reason="needs openjdk-17-demo and libatk-wrapper-java-jni (scripts/setup.sh --dev)",
)
def test_a_swing_app_publishes_its_tree_through_the_atk_wrapper():
    # Without the wrapper's options (the old environment) the tree stays empty.
    app = App(["java", "-jar", str(NOTEPAD)], timeout=90.0)
    with VirtualDesktop((1024, 700), [app]) as desktop:
        labels = _tree_labels(desktop, {"File", "Edit"})
    assert {"File", "Edit"} <= labels, labels


@accessible
@pytest.mark.skipif(not SYSTEM_PYTHON.exists(), reason="needs /usr/bin/python3")
def test_a_wx_app_publishes_its_tree(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(
        "import sys\n"
        "try:\n    import wx\nexcept ImportError:\n    sys.exit(3)\n"
        "app = wx.App()\nframe = wx.Frame(None, title='wx form')\n"
        "panel = wx.Panel(frame)\nsizer = wx.BoxSizer(wx.VERTICAL)\n"
        "sizer.Add(wx.Button(panel, label='Press me'))\n"
        "sizer.Add(wx.CheckBox(panel, label='Keep it'))\n"
        "panel.SetSizer(sizer)\nframe.Show()\napp.MainLoop()\n"
    )
    if subprocess.run([str(SYSTEM_PYTHON), "-c", "import wx"], capture_output=True).returncode:
        pytest.skip("no wxPython for /usr/bin/python3 (python3-wxgtk4.0)")
    with VirtualDesktop(
        (800, 600), [App([str(SYSTEM_PYTHON), str(probe)], timeout=60.0)]
    ) as desktop:
        labels = _tree_labels(desktop, {"Press me", "Keep it"})
    assert {"Press me", "Keep it"} <= labels, labels


@accessible
@pytest.mark.skipif(shutil.which("firefox-esr") is None, reason="firefox-esr is not installed")
def test_a_firefox_page_publishes_its_tree(tmp_path):
    page = tmp_path / "page.html"
    page.write_text(
        "<!doctype html><title>form</title><button>Press me</button>"
        "<label><input type=checkbox> Keep it</label>"
    )
    profile = tmp_path / "profile"
    profile.mkdir()
    (profile / "user.js").write_text(
        'user_pref("browser.aboutwelcome.enabled", false);\n'
        'user_pref("browser.shell.checkDefaultBrowser", false);\n'
        'user_pref("datareporting.policy.dataSubmissionPolicyBypassNotification", true);\n'
    )
    argv = ["firefox-esr", "--new-instance", "--profile", str(profile), page.as_uri()]
    app = App(argv, timeout=90.0, env={"HOME": str(tmp_path)})
    with VirtualDesktop((1024, 700), [app]) as desktop:
        labels = _tree_labels(desktop, {"Press me"})
    assert "Press me" in labels, labels
