"""How the oracle solves each MiniWoB++ task it knows, read from the page's DOM.

Each solver is a generator over a live MiniWobPage yielding steps — Click(element),
Type(text), Key(keys) — and re-reads the DOM whenever it resumes, so it follows what
the previous step did. Turning a step into an action on the screen is oracle.py's job.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["SOLVERS", "Click", "Key", "Step", "Type"]


@dataclass(frozen=True)
class Click:
    """Click a DOM element (the oracle finds the screen component over it)."""

    element: Any
    what: str


@dataclass(frozen=True)
class Type:
    """Type text into whatever has the keyboard focus."""

    text: str


@dataclass(frozen=True)
class Key:
    """Press one key chord, e.g. ["enter"]."""

    keys: tuple[str, ...]


Step = Click | Type | Key
Solver = Callable[[Any], Iterator[Step]]

_VISIBLE_WITH_TEXT = """
const [selector, text] = arguments;
return Array.from(document.querySelectorAll(selector)).filter(e => {
  const r = e.getBoundingClientRect();
  const shown = r.width > 0 && r.height > 0 && getComputedStyle(e).visibility !== 'hidden';
  return shown && (text === null || e.innerText.trim() === text);
});
"""


def _all(page: Any, selector: str, text: str | None = None) -> list[Any]:
    return list(page.driver.execute_script(_VISIBLE_WITH_TEXT, selector, text))


def _one(page: Any, selector: str, text: str | None = None) -> Any:
    found = _all(page, selector, text)
    if not found:
        wanted = selector if text is None else f"{selector} with text {text!r}"
        raise LookupError(f"the page shows no {wanted}")
    return found[0]


def _click(page: Any, selector: str, text: str | None = None) -> Click:
    return Click(_one(page, selector, text), selector if text is None else repr(text))


def _button(page: Any, text: str) -> Iterator[Step]:
    yield _click(page, "#area button, #area input[type=submit]", text)


def click_button(page: Any) -> Iterator[Step]:
    yield from _button(page, page.fields["target"])


def click_button_sequence(page: Any) -> Iterator[Step]:
    yield from _button(page, "ONE")
    yield from _button(page, "TWO")


def click_test(page: Any) -> Iterator[Step]:
    yield _click(page, "#subbtn")


def click_checkboxes(page: Any) -> Iterator[Step]:
    targets = [v for k, v in page.fields.items() if k.startswith("target")]
    for target in targets:
        yield _click(page, "#boxes label", target)
    yield from _button(page, "Submit")


def click_option(page: Any) -> Iterator[Step]:
    yield _click(page, "#boxes label", page.fields["target"])
    yield from _button(page, "Submit")


def click_collapsible(page: Any) -> Iterator[Step]:
    yield _click(page, "#area h3")
    yield from _button(page, "Submit")


def click_collapsible_2(page: Any) -> Iterator[Step]:
    target = page.fields["target"]
    for header in _all(page, "#area h3"):
        if not _all(page, "#area .alink", target):
            yield Click(header, "section header")
        if _all(page, "#area .alink", target):
            yield _click(page, "#area .alink", target)
            return
    raise LookupError(f"no section holds the link {target!r}")


def click_dialog(page: Any) -> Iterator[Step]:
    yield _click(page, ".ui-dialog-titlebar-close")


def click_dialog_2(page: Any) -> Iterator[Step]:
    target = page.fields["target"]
    if target.lower() == "x":
        yield _click(page, ".ui-dialog-titlebar-close")
    else:
        yield _click(page, ".ui-dialog-buttonpane button", target)


def click_link(page: Any) -> Iterator[Step]:
    yield _click(page, "#area .alink", page.fields["target"])


def click_tab(page: Any) -> Iterator[Step]:
    yield _click(page, "#area .ui-tabs-anchor", f"Tab #{page.fields['target']}")


def click_tab_2(page: Any) -> Iterator[Step]:
    target = page.fields["target"]
    panel = page.driver.execute_script(
        "const t = arguments[0];"
        "for (const p of document.querySelectorAll('#area [role=tabpanel]'))"
        "  for (const a of p.querySelectorAll('.alink')) if (a.innerText.trim() === t) return p.id;"
        "return null;",
        target,
    )
    if panel is None:
        raise LookupError(f"no tab holds the link {target!r}")
    if not _all(page, "#area .alink", target):
        yield _click(page, f"#area a[href='#{panel}']")
    yield _click(page, "#area .alink", target)


def click_widget(page: Any) -> Iterator[Step]:
    yield _click(page, f"#area [data-type={page.fields['target']!r}]")


def _enter(page: Any, selector: str, text: str) -> Iterator[Step]:
    yield _click(page, selector)
    yield Type(text)


def enter_text(page: Any) -> Iterator[Step]:
    yield from _enter(page, "#area input[type=text]", page.fields["target"])
    yield from _button(page, "Submit")


def enter_text_2(page: Any) -> Iterator[Step]:
    text = page.fields["text"]
    text = text.lower() if page.fields["case"] == "lower" else text.upper()
    yield from _enter(page, "#area input[type=text]", text)
    yield from _button(page, "Submit")


def enter_password(page: Any) -> Iterator[Step]:
    yield from _enter(page, "#password", page.fields["target"])
    yield from _enter(page, "#verify", page.fields["target"])
    yield from _button(page, "Submit")


def login_user(page: Any) -> Iterator[Step]:
    yield from _enter(page, "#username", page.fields["username"])
    yield from _enter(page, "#password", page.fields["password"])
    yield from _button(page, "Login")


def focus_text(page: Any) -> Iterator[Step]:
    yield _click(page, "#area input")


def focus_text_2(page: Any) -> Iterator[Step]:
    yield _click(page, f"#tt{int(page.fields['target'])}")


def choose_list(page: Any) -> Iterator[Step]:
    # a click opens Chromium's own list popup; typing the name selects it, enter closes it
    yield _click(page, "#area select")
    yield Type(page.fields["target"])
    yield Key(("enter",))
    yield from _button(page, "Submit")


SOLVERS: dict[str, Solver] = {
    "choose-list": choose_list,
    "click-button": click_button,
    "click-button-sequence": click_button_sequence,
    "click-checkboxes": click_checkboxes,
    "click-checkboxes-transfer": click_checkboxes,
    "click-collapsible": click_collapsible,
    "click-collapsible-2": click_collapsible_2,
    "click-dialog": click_dialog,
    "click-dialog-2": click_dialog_2,
    "click-link": click_link,
    "click-option": click_option,
    "click-tab": click_tab,
    "click-tab-2": click_tab_2,
    "click-tab-2-easy": click_tab_2,
    "click-test": click_test,
    "click-test-2": click_button,
    "click-test-transfer": click_button,
    "click-widget": click_widget,
    "enter-password": enter_password,
    "enter-text": enter_text,
    "enter-text-2": enter_text_2,
    "enter-text-dynamic": enter_text,
    "focus-text": focus_text,
    "focus-text-2": focus_text_2,
    "login-user": login_user,
    "unicode-test": click_button,
}
"""Task name → solver. The oracle knows exactly these tasks."""
