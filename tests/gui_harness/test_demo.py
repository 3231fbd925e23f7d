"""The demo end to end on a real Xvfb display, judged by the Tk app's own state file."""

from __future__ import annotations

import io
import shutil

import pytest

from gui_harness.demo.policy import COLOUR, COUNTRY, NAME
from gui_harness.demo.run import check_saved_state, demo_run, run_demo

pytestmark = [
    pytest.mark.x11,
    pytest.mark.skipif(shutil.which("Xvfb") is None, reason="Xvfb is not installed"),
]

INTENDED = {
    "click the Name field": "name",
    "tick Subscribe": "subscribe",
    "choose Green": "choice_green",
    "open the Country list": "country",
    "pick Canada": "country_list",
    "press Save": "save",
}


def inside(point, box) -> bool:
    return box["x"] <= point[0] < box["x"] + box["w"] and box["y"] <= point[1] < box["y"] + box["h"]


def check_clicks_landed(run) -> None:
    """Every click the agent dispatched landed inside the widget its goal named."""
    clicks = run.state["clicks"]
    acted = [s for s in run.result.steps if s["action"]["type"] == "click"]
    assert len(clicks) == len(acted)
    for step, click in zip(acted, clicks, strict=True):
        widget = INTENDED[step["goal"]]
        assert click["widget"] == widget, (step, click)
        assert inside((click["x_root"], click["y_root"]), run.state["widgets"][widget])


def test_demo_fills_the_real_form_and_every_click_lands_on_its_widget():
    run = demo_run()
    assert run.result.success and run.result.stop_reason == "done"
    assert check_saved_state(run.state) is None
    assert run.state["state"] == {
        "name": NAME,
        "subscribe": True,
        "choice": COLOUR,
        "country": COUNTRY,
    }
    check_clicks_landed(run)


def test_demo_works_through_the_transform_at_scale_2():
    run = demo_run(size=(1280, 800), max_image_width=640)
    observe = run.session.dag.find(name="observe", kind="code")[0]
    assert observe.output["size"] == [640, 400]
    assert check_saved_state(run.state) is None
    check_clicks_landed(run)


def test_run_demo_prints_progress_and_writes_a_report(tmp_path):
    out = io.StringIO()
    report = tmp_path / "report.html"
    assert run_demo(report=report, out=out) == 0
    text = out.getvalue()
    assert "step 1/12: click the Name field" in text
    assert "the demo passed" in text
    page = report.read_text(encoding="utf-8")
    assert "gui_step" in page
    opening = [
        page.index("<h1>gui_agent succeeded</h1>"),
        page.index("<b>Task:</b> Type Alice"),
        page.index("<b>Outcome:</b> succeeded"),
        page.index('<img alt="the final screen"'),
        page.index("<th>step</th>"),
    ]
    assert opening == sorted(opening)


def test_run_task_without_a_display_says_what_to_do(monkeypatch):
    from gui_harness.run import run_task
    from openprogram import ConfigError

    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(ConfigError, match="--app"):
        run_task("anything", model="openai/test-model")


def test_openprogram_demo_records_the_session_in_the_store(tmp_path, monkeypatch):
    from click.testing import CliRunner

    from openprogram.cli import cli

    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["demo", "--store", "runs.db", "--report", "r.html"])
    assert result.exit_code == 0, result.output
    assert "the demo passed" in result.output
    listed = CliRunner().invoke(cli, ["sessions", "list", "--store", "runs.db"])
    assert listed.exit_code == 0 and len(listed.output.strip().splitlines()) == 2
