"""The window manager a VirtualDesktop runs (openbox): decorations, dialogs that stack and
take the focus, raising and maximising, and clicks that land where perception saw a
component although every window sits below a title bar."""

from __future__ import annotations

import json
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gui_harness.actions import Click, Keypress, Type, resolve
from gui_harness.demo.app import demo_app, read_state
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception import Perception
from tests.gui_harness.desktop.test_virtual import gone, wait_for

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(
        shutil.which("openbox") is None, reason="openbox is not installed (scripts/setup.sh)"
    ),
]

# A main window with a button that opens a modal dialog with an entry; the dialog's OK
# writes what was typed. Every event goes to the JSON file given as argv[1].
_DIALOG_APP = textwrap.dedent(
    """
    import json, sys, tkinter as tk
    path = sys.argv[1]
    events = []
    def note(**event):
        events.append(event)
        with open(path + ".tmp", "w") as f:
            json.dump(events, f)
        import os; os.replace(path + ".tmp", path)
    root = tk.Tk()
    root.title("Main")
    root.geometry("400x300+30+30")
    def ok(dialog, entry):
        note(saved=entry.get())
        dialog.destroy()
    def open_dialog():
        dialog = tk.Toplevel(root)
        dialog.title("Dialog")
        dialog.transient(root)
        entry = tk.Entry(dialog)
        entry.pack(padx=20, pady=20)
        entry.focus_set()
        entry.bind("<Return>", lambda e: ok(dialog, entry))
        dialog.bind("<Map>", lambda e: note(dialog="mapped") if e.widget is dialog else None)
    button = tk.Button(root, text="Open", command=open_dialog)
    button.place(x=20, y=20, width=100, height=40)
    root.update()
    note(ready=True)
    root.mainloop()
    """
)


def _events(path: Path) -> list[dict[str, Any]]:
    try:
        return json.loads(path.read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        return []


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[VirtualDesktop, Path]]:
    state = tmp_path_factory.mktemp("wm") / "state.json"
    with VirtualDesktop((1024, 700), [demo_app(state)]) as desktop:
        yield desktop, state


def test_the_window_manager_runs_decorates_windows_and_ends_with_the_desktop(tmp_path):
    with VirtualDesktop((640, 480), [demo_app(tmp_path / "state.json")]) as desktop:
        wm = desktop.wm_pid
        assert wm is not None and not gone(wm)
        assert desktop.window_manager_note is None
        assert wm not in desktop.pids  # Xvfb and the apps, as before
        (window,) = desktop.desktop.visible_windows()
        # the demo asks for +40+40: the frame is there, the content below its title bar
        assert window.title == "Demo form"
        assert window.x >= 40 and window.y >= 40 + 10
    assert gone(wm)


def test_a_click_on_a_component_perception_found_lands_on_it_below_the_title_bar(demo):
    desktop, state = demo
    observation = Perception(ocr=False).perceive(desktop.screenshot())
    save = read_state(state)["widgets"]["save"]  # type: ignore[index]
    centre = (save["x"] + save["w"] // 2, save["y"] + save["h"] // 2)
    found = [
        c
        for c in observation.components
        if c.kind == "button"
        and c.box[0] <= centre[0] < c.box[0] + c.box[2]
        and c.box[1] <= centre[1] < c.box[1] + c.box[3]
    ]
    assert found, [c.to_dict() for c in observation.components]
    before = len(read_state(state)["clicks"])  # type: ignore[index]
    desktop.execute(resolve(Click(element=found[0].index), observation.components))
    clicks = wait_for(lambda: (s := read_state(state)) and s["clicks"][before:])
    assert clicks[0]["widget"] == "save"
    assert save["x"] <= clicks[0]["x_root"] < save["x"] + save["w"]


def test_a_dialog_stacks_over_its_window_takes_the_focus_and_gets_the_keys(tmp_path):
    events = tmp_path / "events.json"
    script = [sys.executable, "-c", _DIALOG_APP, str(events)]
    with VirtualDesktop((800, 600), [script]) as desktop:
        wait_for(lambda: _events(events))
        (main,) = desktop.desktop.visible_windows()
        desktop.execute(Click(x=main.x + 70, y=main.y + 40))
        wait_for(lambda: {"dialog": "mapped"} in _events(events), seen=lambda: _events(events))
        windows = wait_for(lambda: len(w := desktop.desktop.visible_windows()) == 2 and w)
        assert [w.title for w in windows] == ["Main", "Dialog"]  # bottom to top
        dialog = windows[1]
        # placed over its parent, not piled at (0, 0)
        assert dialog.x > 0 and dialog.y > 0
        assert main.x <= dialog.x + dialog.width // 2 <= main.x + main.width
        # it has the focus: typing reaches its entry without a click
        desktop.execute(Type(text="hello"))
        desktop.execute(Keypress(keys=["enter"]))
        wait_for(lambda: {"saved": "hello"} in _events(events), seen=lambda: _events(events))


def test_windows_can_be_raised_and_maximised(tmp_path):
    first, second = (
        [sys.executable, "-c", _DIALOG_APP, str(tmp_path / f"{name}.json")] for name in ("a", "b")
    )
    with VirtualDesktop((800, 600), [first, second]) as desktop:
        wait_for(lambda: len(desktop.desktop.visible_windows()) == 2)
        bottom, top = desktop.desktop.visible_windows()
        desktop.desktop.raise_window(bottom.id)
        wait_for(lambda: desktop.desktop.visible_windows()[-1].id == bottom.id)
        desktop.desktop.maximize_window(bottom.id)

        def maximised() -> Any:
            windows = desktop.desktop.visible_windows()
            return windows[-1] if windows[-1].id == bottom.id and windows[-1].width == 800 else None

        grown = wait_for(maximised)
        assert grown.id == bottom.id and grown.height > 500 and grown.y > 0  # under its title
        assert top.id in {w.id for w in desktop.desktop.visible_windows()}
