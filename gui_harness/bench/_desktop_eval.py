"""The evaluators of desktop tasks: each reads the app's real output — a saved file, a
spreadsheet cell, the clipboard, an accessibility value — and says whether it is right.

Owns `evaluate` (every check of a task, polled until all hold or a deadline passes, for
apps that write in the background) and the reasons a check fails; never raises for a
wrong or missing output: that is a failure with its reason.
"""

from __future__ import annotations

import re
import subprocess
import time
import zipfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import ParseError

from gui_harness.bench._odf import odf_text, ods_cells
from gui_harness.bench.desktop_spec import (
    AccessibilityValue,
    Clipboard,
    EvaluatorSpec,
    FileText,
    OdsCell,
)
from openprogram.echo import echo

__all__ = ["Verdict", "evaluate", "folded", "names"]

Verdict = tuple[bool, str]
"""(passed, why): why the output is right or what is wrong with it."""

_POLL_S = 0.25


def evaluate(
    checks: Sequence[EvaluatorSpec],
    expand: Callable[[str], str],
    *,
    display: str | None = None,
    env: Mapping[str, str] | None = None,
    accessibility: Callable[[], Any] | None = None,
    timeout: float = 10.0,
) -> Verdict:
    """Whether every check holds, polled for up to `timeout` seconds. `expand` turns a
    task path ("{workdir}/out.ods") into a real one; `display`/`env` reach the clipboard;
    `accessibility` returns the components of the apps' trees."""
    deadline = time.monotonic() + timeout
    while True:
        verdicts = [_check(c, expand, display, env, accessibility) for c in checks]
        failed = [why for ok, why in verdicts if not ok]
        if not failed:
            return True, "; ".join(why for _, why in verdicts)
        if time.monotonic() > deadline:
            return False, "; ".join(failed)
        time.sleep(_POLL_S)


def _check(
    check: EvaluatorSpec,
    expand: Callable[[str], str],
    display: str | None,
    env: Mapping[str, str] | None,
    accessibility: Callable[[], Any] | None,
) -> Verdict:
    try:
        if isinstance(check, FileText):
            return _file_text(check, Path(expand(check.path)))
        if isinstance(check, OdsCell):
            return _ods_cell(check, Path(expand(check.path)))
        if isinstance(check, Clipboard):
            return _text_matches("the clipboard", _clipboard(display, env), check.expected,
                                 [check.contains] if check.contains else [])  # fmt: skip
        if isinstance(check, AccessibilityValue):
            return _accessible(check, accessibility)
    except (OSError, zipfile.BadZipFile, ParseError, KeyError, ValueError) as exc:
        return False, f"{check.type}: cannot read the output ({echo(str(exc), 200)})"
    raise AssertionError(f"unknown evaluator {check!r}")  # pydantic admits no other


def _file_text(check: FileText, path: Path) -> Verdict:
    if any(ch in str(path) for ch in "*?["):  # a file the app names itself (a uuid)
        found = sorted(p for p in Path(path.anchor).glob(str(path.relative_to(path.anchor))))
        files = [p for p in found if p.is_file()]
        if len(files) != 1:
            many = f"{len(files)} files match" if files else "no file matches"
            some = f": {echo([p.name for p in files[:3]])}" if files else ""
            return False, f"{many} {echo(path.name)}{some}"
        path = files[0]
    if not path.is_file():
        return False, f"{path.name} was not saved"
    if path.suffix in (".odt", ".ods"):
        text = odf_text(path)
    else:
        text = path.read_bytes()[:1_000_000].decode("utf-8", errors="replace")
    return _text_matches(path.name, text, check.expected, check.contains)


def _text_matches(what: str, text: str, expected: str | None, contains: list[str]) -> Verdict:
    if expected is not None and text.strip() != expected.strip():
        return False, f"{what} holds {echo(text.strip(), 120)}, not {echo(expected, 120)}"
    missing = [part for part in contains if part not in text]
    if missing:
        return False, f"{what} lacks {echo(missing, 120)} (it holds {echo(text.strip(), 120)})"
    return True, f"{what} holds {echo(text.strip(), 60)}"


def _ods_cell(check: OdsCell, path: Path) -> Verdict:
    if not path.is_file():
        return False, f"{path.name} was not saved"
    cells = ods_cells(path, check.sheet)
    text, number = cells.get(check.cell.upper(), ("", None))
    where = f"{path.name}!{check.cell.upper()}"
    if isinstance(check.expected, (int, float)):
        if number is not None and abs(number - float(check.expected)) < 1e-9:
            return True, f"{where} = {number:g}"
        return False, f"{where} holds {echo(text, 60)}, not {check.expected:g}"
    if text.strip() == check.expected.strip():
        return True, f"{where} = {echo(text, 60)}"
    return False, f"{where} holds {echo(text, 60)}, not {echo(check.expected, 60)}"


def _clipboard(display: str | None, env: Mapping[str, str] | None) -> str:
    if display is None:
        raise ValueError("the desktop is not running")
    done = subprocess.run(
        ["xclip", "-o", "-selection", "clipboard"],
        env={**(env or {}), "DISPLAY": display},
        capture_output=True,
        timeout=10,
        check=False,
    )
    return done.stdout[:100_000].decode("utf-8", errors="replace")


def names(component: Any) -> tuple[str, ...]:
    """What names `component` for a task's exact or partial match, in `folded()` form:
    its label and the caption beside it, each with and without its trailing colon (a
    drop-down Qt names by its current option, "/root", captioned "Look in:"; a control Qt
    names by its buddy label, "File name:"). A text keeps its colon: "Title:" is the
    caption, not the field it names."""
    label = folded(component.label or "")
    caption = folded(getattr(component, "caption", None) or "")
    found = [label]
    if component.kind != "text":
        found.append(label.rstrip(":").rstrip())
    if caption:
        found += [caption, caption.rstrip(":").rstrip()]
    return tuple(dict.fromkeys(found))


def folded(text: str) -> str:
    """`text` as names are compared: trimmed, case folded, and an ellipsis written one
    way whether the toolkit draws "…" (GTK), "..." (Qt, Tk) or OCR read two dots."""
    text = text.strip().casefold().replace("…", "...")
    return re.sub(r"\.{2,}$", "...", text)


def _accessible(check: AccessibilityValue, components: Callable[[], Any] | None) -> Verdict:
    if components is None:
        return False, "the desktop has no accessibility bus to read"
    want = folded(check.label) if check.label is not None else None
    part = folded(check.label_contains) if check.label_contains is not None else None
    seen = []
    for component in components():
        named = names(component)
        if want is not None and want not in named:
            continue
        if part is not None and not any(part in name for name in named):
            continue
        if check.kind is not None and component.kind != check.kind:
            continue
        seen.append(component)
        if set(check.states) <= set(component.states):
            return True, f"the accessibility tree shows {component.kind} {echo(component.label)}"
    name = echo(check.label or check.label_contains)
    if seen:
        states = [list(c.states) for c in seen[:3]]
        return False, f"{name} is there with states {states}, not {check.states}"
    return False, f"no {check.kind or 'component'} labelled {name} in the accessibility tree"
