"""VirtualDesktop and X11Desktop against a real Xvfb running the bundled Tk demo app."""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gui_harness.actions import Click, DoubleClick, Drag, Keypress, Scroll, Type, Wait
from gui_harness.demo.app import demo_app, read_state
from gui_harness.desktop.base import Desktop
from gui_harness.desktop.virtual import App, VirtualDesktop
from gui_harness.errors import DesktopError, DesktopTimeout

_skip_without_xvfb = pytest.mark.skipif(
    shutil.which("Xvfb") is None, reason="Xvfb is not installed (apt-get install xvfb)"
)


def needs_xvfb(test: Callable[..., None]) -> Callable[..., None]:
    """Mark a test x11 and skip it when there is no Xvfb to run it on."""
    return pytest.mark.x11(_skip_without_xvfb(test))


def wait_for(
    predicate: Callable[[], Any],
    timeout: float = 10.0,
    *,
    interval: float = 0.02,
    seen: Callable[[], object] = lambda: None,
) -> Any:
    """Poll `predicate` until it returns something truthy; fail after `timeout` seconds.

    `seen` describes the observed state in the failure message.
    """
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"condition not met within {timeout}s; last seen: {seen()!r}")
        time.sleep(interval)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


class Demo:
    """A running demo app on a VirtualDesktop, with helpers to read what it reports."""

    def __init__(self, desktop: VirtualDesktop, state_path: Path) -> None:
        self.desktop = desktop
        self.state_path = state_path

    def state(self) -> dict[str, Any]:
        state = read_state(self.state_path)
        assert state is not None
        return state

    def centre(self, widget: str, *, dx: int | None = None) -> tuple[int, int]:
        box = self.state()["widgets"][widget]
        x = box["x"] + (box["w"] // 2 if dx is None else dx)
        return x, box["y"] + box["h"] // 2

    def click(self, widget: str) -> None:
        x, y = self.centre(widget)
        self.desktop.execute(Click(x=x, y=y))

    def wait_form(self, **expected: Any) -> dict[str, Any]:
        def matches() -> dict[str, Any] | None:
            state = self.state()
            return state if all(state["form"][k] == v for k, v in expected.items()) else None

        return wait_for(matches, seen=lambda: self.state()["form"])

    def type_name(self, text: str) -> None:
        self.click("name")
        self.desktop.execute(Type(text=text))
        self.wait_form(name=text)


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[Demo]:
    state_path = tmp_path / "state.json"
    with VirtualDesktop((1280, 800), [demo_app(state_path)]) as desktop:
        yield Demo(desktop, state_path)


@needs_xvfb
def test_screenshot_has_the_screen_size_and_shows_the_demo_app(demo: Demo) -> None:
    assert isinstance(demo.desktop, Desktop)
    assert demo.desktop.size == (1280, 800)
    image = demo.desktop.screenshot()
    assert image.mode == "RGB"
    assert image.size == (1280, 800)
    pixels = np.asarray(image)
    box = demo.state()["widgets"]["save"]
    assert pixels.std() > 10
    assert pixels[box["y"] + box["h"] // 2, box["x"] + 8].tolist() != [0, 0, 0]
    assert demo.desktop.display is not None and demo.desktop.display.startswith(":")


@needs_xvfb
def test_typing_a_name_and_clicking_save_records_the_saved_name(demo: Demo) -> None:
    assert demo.state()["saved"] is False
    demo.type_name("Alice")
    demo.click("save")
    state = wait_for(lambda: (s := demo.state())["saved"] and s)
    assert state["saves"] == 1
    assert state["state"] == {"name": "Alice", "subscribe": False, "choice": None, "country": None}


@needs_xvfb
def test_ticking_the_checkbox_and_choosing_a_colour_are_saved(demo: Demo) -> None:
    demo.click("subscribe")
    demo.wait_form(subscribe=True)
    demo.click("choice_green")
    demo.wait_form(choice="green")
    demo.click("save")
    state = wait_for(lambda: (s := demo.state())["saved"] and s)
    assert state["state"]["subscribe"] is True
    assert state["state"]["choice"] == "green"
    demo.click("subscribe")
    demo.wait_form(subscribe=False)


@needs_xvfb
def test_every_recorded_click_lands_inside_the_intended_widget(demo: Demo) -> None:
    # the country chooser last: its drop-down list takes the next click to close itself
    targets = ["name", "subscribe", "choice_red", "choice_blue", "save", "country"]
    for target in targets:
        demo.click(target)
    state = wait_for(lambda: len((s := demo.state())["clicks"]) == len(targets) and s)
    for target, click in zip(targets, state["clicks"], strict=True):
        box = state["widgets"][target]
        assert click["widget"] == target
        assert box["x"] <= click["x_root"] < box["x"] + box["w"]
        assert box["y"] <= click["y_root"] < box["y"] + box["h"]


@needs_xvfb
def test_ctrl_a_then_backspace_clears_the_entry(demo: Demo) -> None:
    demo.type_name("Alice")
    demo.desktop.execute(Keypress(keys=["ctrl", "a"]))
    demo.desktop.execute(Keypress(keys=["backspace"]))
    demo.wait_form(name="")


@needs_xvfb
def test_typing_uses_shift_for_capitals_and_borrows_keys_for_characters_off_the_map(
    demo: Demo,
) -> None:
    demo.type_name("Hello, World! #1 (a+b)=c_d ~é€ñ")


@needs_xvfb
def test_typing_more_distinct_characters_off_the_map_than_spare_keycodes(demo: Demo) -> None:
    demo.type_name("αβγδεζηθικλμνξοπρστυφχψω ΑΩ абвгд")


@needs_xvfb
def test_double_click_selects_a_word_that_typing_replaces(demo: Demo) -> None:
    demo.type_name("Alice Smith")
    x, y = demo.centre("name", dx=24)
    demo.desktop.execute(DoubleClick(x=x, y=y))
    demo.desktop.execute(Type(text="Bob"))
    demo.wait_form(name="Bob Smith")


@needs_xvfb
def test_drag_across_the_entry_selects_the_text_that_typing_replaces(demo: Demo) -> None:
    demo.type_name("Alice")
    box = demo.state()["widgets"]["name"]
    y = box["y"] + box["h"] // 2
    demo.desktop.execute(Drag(path=[(box["x"] + box["w"] - 8, y), (box["x"] + 4, y)]))
    demo.desktop.execute(Type(text="Bob"))
    demo.wait_form(name="Bob")


@needs_xvfb
def test_scrolling_the_wheel_over_the_chooser_steps_through_the_countries(demo: Demo) -> None:
    x, y = demo.centre("country")
    demo.desktop.execute(Scroll(x=x, y=y, scroll_y=3))
    demo.wait_form(country="Brazil")  # from none: the first, then two further down
    demo.desktop.execute(Scroll(x=x, y=y, scroll_y=-2))
    demo.wait_form(country="Argentina")


@needs_xvfb
def test_wait_sleeps_for_its_milliseconds(demo: Demo) -> None:
    start = time.monotonic()
    demo.desktop.execute(Wait(ms=120))
    assert time.monotonic() - start >= 0.12


@needs_xvfb
def test_closing_stops_the_app_and_xvfb(tmp_path: Path) -> None:
    desktop = VirtualDesktop((640, 480), [demo_app(tmp_path / "state.json")])
    with desktop:
        pids = list(desktop.pids)
        assert len(pids) == 2
        assert not any(gone(pid) for pid in pids)
    assert all(gone(pid) for pid in pids)
    with pytest.raises(DesktopError, match="not running"):
        desktop.screenshot()


@needs_xvfb
def test_an_app_that_exits_early_raises_and_leaves_nothing_running() -> None:
    desktop = VirtualDesktop(
        (640, 480),
        [[sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]],
    )
    with pytest.raises(DesktopError, match=r"exited with code 3(.|\n)*boom"):
        desktop.start()
    assert len(desktop.pids) == 2
    assert all(gone(pid) for pid in desktop.pids)


@needs_xvfb
def test_an_app_that_never_gets_ready_times_out_and_is_stopped() -> None:
    sleeper = App([sys.executable, "-c", "import time; time.sleep(60)"], timeout=0.5)
    desktop = VirtualDesktop((640, 480), [sleeper])
    with pytest.raises(DesktopTimeout, match=r"not ready within 0\.5s"):
        desktop.start()
    assert all(gone(pid) for pid in desktop.pids)


@needs_xvfb
def test_an_app_can_be_a_callable_given_the_display(tmp_path: Path) -> None:
    seen: list[str] = []

    def app(display: str) -> App:
        seen.append(display)
        return demo_app(tmp_path / "state.json")

    with VirtualDesktop((640, 480), [app]) as desktop:
        assert seen == [desktop.display]


@needs_xvfb
def test_an_app_without_a_ready_check_is_ready_when_its_window_shows() -> None:
    script = "import tkinter; root = tkinter.Tk(); root.geometry('200x100+10+10'); root.mainloop()"
    with VirtualDesktop(
        (640, 480), [[sys.executable, "-c", script]], window_manager=False
    ) as desktop:
        windows = desktop.desktop.visible_windows()
        assert [(w.pid, w.x, w.y, w.width) for w in windows] == [(desktop.pids[1], 10, 10, 200)]
        assert desktop.wm_pid is None
        assert desktop.window_manager_note == "window_manager=False was passed to VirtualDesktop"


def test_missing_xvfb_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DesktopError, match="apt-get install xvfb"):
        VirtualDesktop().start()
