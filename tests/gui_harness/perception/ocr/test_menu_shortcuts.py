"""Menu items read off pixels are named as the user reads them (issue 41, the unseen-apps
task set): a Tk menu (git gui's Branch menu; Tk publishes no tree) draws an item's name
and its shortcut in one row, found as one item and read "Checkout...Ctrl-O", and OCR
reads the highlighted item's ellipsis as two dots, "Create.."; "click Checkout..." and
"click Create..." found neither. The shortcut is cut from the label (ocr_worker
_unshortcut) and a task's name matches an ellipsis however it is drawn or read
(_desktop_eval.folded). A real git gui on Xvfb."""

from __future__ import annotations

import time
from pathlib import Path

from gui_harness.actions import Click
from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import Target
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception
from tests.gui_harness.perception.test_captions_git_gui import _repo, pytestmark  # noqa: F401


def test_a_tk_menus_items_are_named_without_their_shortcuts(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    app = App(["git", "gui"], env={"HOME": str(tmp_path)}, cwd=str(repo), timeout=60.0)
    with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
        perception = Perception()
        try:
            deadline = time.monotonic() + 60  # OCR on a loaded machine
            branch = None
            while branch is None and time.monotonic() < deadline:
                branch = find_target(
                    Target(label="Branch"), perception.perceive(desktop.screenshot()).components
                )
                time.sleep(0.3)
            assert branch is not None
            clicked = 0.0
            while True:
                seen = perception.perceive(desktop.screenshot())
                items = " ".join(c.label for c in seen.components if c.label)
                if ("Rename" in items and "Checkout" in items) or time.monotonic() > deadline:
                    break
                if time.monotonic() - clicked > 10:  # a busy Tk may drop the click: again
                    desktop.execute(Click(x=branch.center[0], y=branch.center[1]))
                    clicked = time.monotonic()
                time.sleep(0.5)
            labels = [c.label for c in seen.components]
            checkout = find_target(Target(label="Checkout..."), seen.components)
            create = find_target(Target(label="Create..."), seen.components)
        finally:
            perception.close()
    assert checkout is not None, labels
    assert create is not None, labels
    assert create.box[1] < checkout.box[1], (create, checkout)  # the menu's first item
