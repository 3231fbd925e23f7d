"""A text area's caption stays its own, not its scroll bar's (issue 41, the unseen-apps
task set): git gui (Tk, pixels and OCR only) captions its commit message box "Commit
Message:" from above; the scroll bar's arrows standing just right of the box were taken
for its parts, as a spin box's arrows are, and the upper arrow, higher on the screen
than the box's top, came first in reading order: "click the field captioned Commit
Message" clicked the arrow and the message was typed nowhere. A real git gui on Xvfb."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from gui_harness.bench.desktop_oracle import find_target
from gui_harness.bench.desktop_spec import Target
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.perception import Perception

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
    pytest.mark.skipif(shutil.which("git") is None, reason="no git"),
    pytest.mark.skipif(
        not Path("/usr/lib/git-core/git-gui").exists(), reason="scripts/setup.sh --dev installs it"
    ),
]


def _repo(folder: Path) -> Path:
    repo = folder / "repo"
    who = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@b", "HOME": str(folder)}  # fmt: skip
    env = {**os.environ, **who}
    subprocess.run(["git", "init", "-q", str(repo)], check=True, env=env)
    (repo / "notes.txt").write_text("first\n")
    subprocess.run(["git", "add", "notes.txt"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "first"], cwd=repo, check=True, env=env)
    (repo / "notes.txt").write_text("first\nsecond\n")
    return repo


def test_a_text_areas_caption_is_not_its_scroll_bars(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    app = App(["git", "gui"], env={"HOME": str(tmp_path)}, cwd=str(repo), timeout=60.0)
    with VirtualDesktop((1280, 800), [app], accessibility=False) as desktop:
        perception = Perception()
        try:
            deadline = time.monotonic() + 60  # OCR on a loaded machine
            while True:
                seen = perception.perceive(desktop.screenshot())
                caption = [c for c in seen.components if c.label == "Commit Message:"]
                if caption or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
        finally:
            perception.close()
    assert caption, [c.label for c in seen.components]
    box = find_target(Target(label="Commit Message"), seen.components)
    assert box is not None
    assert box.kind == "field" and box.box[3] > 100, box  # the message box, many lines
    right = box.box[0] + box.box[2]
    beside = [c for c in seen.components if c.caption == "Commit Message:" and c.box[0] >= right]
    assert not beside, beside
