"""The live run's early frames: perception prepares the frame taken while the screen
settles, and the next observe perceives that very frame without detecting it again."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gui_harness.agent import gui_agent
from gui_harness.demo.app import demo_app, read_state
from gui_harness.demo.policy import TASK, demo_policy
from gui_harness.demo.run import check_saved_state
from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception import Observation, Perception
from openprogram import Runtime, ScriptedModel, Session
from openprogram.core.image import ImageRef

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]


class _Watched(Perception):
    """A Perception that keeps what it was handed, to compare prepared and perceived."""

    def __init__(self) -> None:
        super().__init__(ocr=False)
        self.prepared: list[Any] = []
        self.perceived: list[Any] = []

    def prepare(self, image: Any) -> None:
        self.prepared.append(image)
        super().prepare(image)

    def perceive(self, image: Any, **options: Any) -> Observation:
        self.perceived.append(image)
        return super().perceive(image, **options)


@pytest.mark.parametrize("size", [(640, 560), (1280, 800)], ids=["scale-1", "scale-2"])
def test_observe_perceives_the_frame_prepared_while_the_screen_settled(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    perception = _Watched()
    state = tmp_path / "state.json"
    with VirtualDesktop(size, apps=[demo_app(state)]) as desktop, Session() as session:
        with Runtime(ScriptedModel(demo_policy)):
            result = gui_agent(TASK, desktop=desktop, perception=perception, max_image_width=640)
        listeners = desktop.desktop._frame_listeners
    assert result.success and check_saved_state(read_state(state)) is None
    assert perception.prepared  # frames came while settling
    prepared = {id(image) for image in perception.prepared}
    # the very picture prepared is perceived (at scale 2, the one resized while settling)
    assert sum(id(image) in prepared for image in perception.perceived) >= 3
    # and hashed then: the record holds that picture
    dag = session.dag
    recorded = []
    for node in dag.find(name="observe", kind="code"):
        shot = node.output["screenshot"]
        recorded.append(dag.image(shot if isinstance(shot, ImageRef) else shot.ref()).pil)
    assert sum(id(image) in prepared for image in recorded) >= 3
    # every later perceive of an unchanged frame reused its components
    assert perception._redetector.incremental >= len(perception.prepared) // 2
    assert not listeners  # the run took its listener away


class _FailingPrepare(Perception):
    """A Perception whose head start always fails (a bug in a subclass, say)."""

    def __init__(self) -> None:
        super().__init__(ocr=False)
        self.attempts = 0

    def prepare(self, image: Any) -> None:
        self.attempts += 1
        raise RuntimeError("prepare broke")


def test_a_failing_head_start_costs_nothing_but_the_head_start(tmp_path: Path) -> None:
    perception = _FailingPrepare()
    state = tmp_path / "state.json"
    with (
        VirtualDesktop((640, 560), apps=[demo_app(state)]) as desktop,
        Session() as session,
        Runtime(ScriptedModel(demo_policy)),
    ):
        result = gui_agent(TASK, desktop=desktop, perception=perception)
    assert perception.attempts  # the settle offered frames and the failure was swallowed
    assert result.success and check_saved_state(read_state(state)) is None
    observed = session.dag.find(name="observe", kind="code")
    assert observed and all(node.status == "completed" for node in observed)
