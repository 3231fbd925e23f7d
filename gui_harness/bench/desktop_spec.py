"""Desktop task files: the JSON schema of DESIGN.md §8 "Desktop tasks", checked by pydantic.

Owns `DesktopTask` (OSWorld's shape: id, instruction, config steps, evaluator, and the
oracle's steps), reading one file or a folder of them with errors that name the file and
the field, and the suite shipped in desktop_tasks/. Running a task is desktop.py's.
"""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gui_harness.errors import InvalidTask
from gui_harness.perception.component import Kind
from openprogram.echo import echo

__all__ = [
    "DesktopTask",
    "EvaluatorSpec",
    "OracleStep",
    "load_desktop_task",
    "load_desktop_tasks",
    "suite_dir",
]

MAX_FILE = 256 * 1024
"""Bytes of one task file: a larger one is refused unread."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# --- config: what sets the app and its files up ----------------------------------------


class WriteFile(_Strict):
    """Write `text` to `path` (under the episode's folder, "{workdir}")."""

    type: Literal["write_file"]
    path: str = Field(min_length=1, max_length=500)
    text: str = Field(max_length=100_000)


class WriteOds(_Strict):
    """Write a spreadsheet with one sheet of `rows` (numbers stay numbers) to `path`."""

    type: Literal["write_ods"]
    path: str = Field(min_length=1, max_length=500)
    rows: list[list[str | int | float]] = Field(max_length=1000)
    sheet: str = Field(default="Sheet1", min_length=1, max_length=100)


class WriteOdt(_Strict):
    """Write a text document of `paragraphs` to `path`."""

    type: Literal["write_odt"]
    path: str = Field(min_length=1, max_length=500)
    paragraphs: list[str] = Field(max_length=1000)


class Launch(_Strict):
    """Start `argv` on the episode's desktop, with `env` added; ready once its window
    shows (within `timeout` seconds). `libreoffice` adds LibreOffice's flags: its GTK 3
    plugin, no restore or logo, and a profile of the episode's own."""

    type: Literal["launch"]
    argv: list[str] = Field(min_length=1, max_length=50)
    env: dict[str, str] = Field(default_factory=dict)
    timeout: float = Field(default=60.0, gt=0, le=600)
    libreoffice: bool = False


class Command(_Strict):
    """Run `argv` on the desktop's display once every app is up (e.g. set the clipboard);
    `input` goes to its stdin."""

    type: Literal["command"]
    argv: list[str] = Field(min_length=1, max_length=50)
    input: str | None = Field(default=None, max_length=100_000)


ConfigStep = Annotated[
    WriteFile | WriteOds | WriteOdt | Launch | Command, Field(discriminator="type")
]


# --- evaluator: what reads the app's real output ---------------------------------------


class FileText(_Strict):
    """The text of `path` (a .odt or .ods is read as its text) equals `expected` (after
    trimming), or contains every string of `contains`. `path` may hold a glob's `*`, `?`
    and `[...]` (a file the app names itself, "{workdir}/store/*/*/.Radicale.props"):
    exactly one file must match."""

    type: Literal["file_text"]
    path: str = Field(min_length=1, max_length=500)
    expected: str | None = None
    contains: list[str] = Field(default_factory=list)


class OdsCell(_Strict):
    """Cell `cell` ("B3") of a saved spreadsheet `path` (first sheet, or `sheet`) holds
    `expected`: numbers compare as numbers, text after trimming."""

    type: Literal["ods_cell"]
    path: str = Field(min_length=1, max_length=500)
    cell: str = Field(pattern=r"^[A-Za-z]{1,3}[0-9]{1,7}$")
    expected: str | float
    sheet: str | None = None


class Clipboard(_Strict):
    """The desktop's clipboard text equals `expected` (trimmed) or contains `contains`."""

    type: Literal["clipboard"]
    expected: str | None = None
    contains: str | None = None


class AccessibilityValue(_Strict):
    """Some component of the apps' accessibility trees has `label` (exactly, or
    containing `label_contains`), optionally of `kind` and with every state of `states`."""

    type: Literal["accessibility"]
    label: str | None = None
    label_contains: str | None = None
    kind: Kind | None = None
    states: list[str] = Field(default_factory=list)


EvaluatorSpec = Annotated[
    FileText | OdsCell | Clipboard | AccessibilityValue, Field(discriminator="type")
]


# --- the oracle's steps ----------------------------------------------------------------


class Target(_Strict):
    """A component of the observation: by label (exact, case-insensitive) or a part of
    it, by kind, the `nth` of those matching in reading order (from 0)."""

    label: str | None = None
    label_contains: str | None = None
    kind: Kind | None = None  # one of perception's kinds: a menu's items are buttons
    nth: int = Field(default=0, ge=0)


class ClickStep(_Strict):
    """Click the component `click` names (waiting for it to show); with `cell`, that
    cell ("B3") of the grid it names."""

    click: Target
    double: bool = False
    cell: str | None = Field(default=None, pattern=r"^([A-Za-z]{1,3}[0-9]{1,7}|R[0-9]+C[0-9]+)$")


class WaitStep(_Strict):
    """Wait until the component `wait_for` names shows."""

    wait_for: Target


class ScrollStep(_Strict):
    """Turn the mouse wheel `down` clicks (negative: up) over the component `scroll`
    names (waiting for it to show): a pane whose part is scrolled out of view."""

    scroll: Target
    down: int = Field(ge=-50, le=50)

    @model_validator(mode="after")
    def _check_down(self) -> ScrollStep:
        if self.down == 0:
            raise ValueError("a scroll step turns the wheel at least one click (down != 0)")
        return self


class KeysStep(_Strict):
    """Press one chord, e.g. ["ctrl", "s"]."""

    keys: list[str] = Field(min_length=1, max_length=8)


class TypeStep(_Strict):
    """Type `type` into the focused field."""

    type: str = Field(max_length=10_000)


OracleStep = ClickStep | WaitStep | ScrollStep | KeysStep | TypeStep


class DesktopTask(_Strict):
    """One desktop task in OSWorld's shape. `app` names the app the summary groups by;
    `config` runs in order (files, then the desktop with the launched apps, then
    commands); `evaluator` judges the real output (all must hold); `oracle` is how the
    offline oracle does it, through component labels, keys and typing only."""

    id: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$", max_length=120)
    app: str = Field(min_length=1, max_length=60)
    instruction: str = Field(min_length=1, max_length=4000)
    config: list[ConfigStep] = Field(min_length=1, max_length=50)
    evaluator: list[EvaluatorSpec] = Field(min_length=1, max_length=20)
    oracle: list[OracleStep] = Field(default_factory=list, max_length=200)
    max_steps: int = Field(default=50, ge=1, le=500)
    size: tuple[int, int] = (1280, 800)


def suite_dir() -> Path:
    """The folder of the suite shipped with gui_harness (desktop_tasks/*.json)."""
    return Path(str(resources.files("gui_harness.bench") / "desktop_tasks"))


def load_desktop_task(path: str | Path) -> DesktopTask:
    """Read and check one task file; InvalidTask names the file and the bad fields."""
    where = str(path)
    try:
        with open(path, "rb") as file:
            raw = file.read(MAX_FILE + 1)
    except OSError as exc:
        raise InvalidTask(f"cannot read task file {echo(where)}: {exc}") from exc
    if len(raw) > MAX_FILE:
        raise InvalidTask(f"{echo(where)}: a task file may have at most {MAX_FILE} bytes")
    try:
        data: Any = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InvalidTask(f"{echo(where)}: not UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise InvalidTask(
            f"{echo(where)}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    if not isinstance(data, dict):
        raise InvalidTask(f'{echo(where)}: a task file holds one JSON object, {{"id": ...}}')
    try:
        return DesktopTask.model_validate(data)
    except ValidationError as exc:
        problems = InvalidTask.problems(exc, label="field ")
        raise InvalidTask(f"{echo(where)}: {problems}") from None


def load_desktop_tasks(folder: str | Path | None = None) -> list[tuple[Path, DesktopTask]]:
    """Every *.json task file in `folder` (default: the shipped suite) and its task,
    sorted by id. Raises InvalidTask for the first bad file, an id used twice, or a
    folder with none."""
    directory = Path(folder) if folder is not None else suite_dir()
    if not directory.is_dir():
        raise InvalidTask(f"{echo(str(directory))} is not a folder of task files")
    tasks: dict[str, tuple[Path, DesktopTask]] = {}
    for path in sorted(directory.glob("*.json")):
        task = load_desktop_task(path)
        if task.id in tasks:
            raise InvalidTask(
                f"{echo(str(path))}: id {task.id!r} is used by {echo(str(tasks[task.id][0]))} too"
            )
        tasks[task.id] = (path, task)
    if not tasks:
        raise InvalidTask(f"{echo(str(directory))} holds no *.json task files")
    return [tasks[key] for key in sorted(tasks)]
