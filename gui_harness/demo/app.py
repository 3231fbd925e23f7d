"""The bundled demo app: a small Tk form that reports its state, widgets and clicks as JSON.

Run it as ``python -m gui_harness.demo.app --state state.json``; demo_app() is the App a
VirtualDesktop launches and read_state() reads the file. Start at DemoForm.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tkinter as tk
from collections.abc import Sequence
from pathlib import Path
from tkinter import ttk
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the app's own process needs Tk only, not the desktop (Xlib, PIL)
    from gui_harness.desktop.virtual import App

__all__ = ["DEMO_SCREEN", "DemoForm", "demo_app", "main", "read_state"]

DEMO_SCREEN = (640, 560)
"""The screen the demo runs on: the form at +40+40 and its open country list fill most of
it, so a screenshot (and the report) shows the form large, not in a corner."""
COLOURS = ("red", "green", "blue")
COUNTRIES = (
    "Argentina", "Australia", "Brazil", "Canada", "Chile", "Denmark", "Egypt", "Finland",
    "France", "Germany", "India", "Italy", "Japan", "Kenya", "Mexico", "Norway", "Peru",
    "Portugal", "Spain", "Sweden",
)  # fmt: skip

_BACKGROUND = "#eef1f6"
_TEXT = "#1f2933"
_ACCENT = "#2563eb"
_FONT = ("DejaVu Sans", 14)
_BOLD = ("DejaVu Sans", 14, "bold")
_TITLE = ("DejaVu Sans", 18, "bold")


def demo_app(state: str | os.PathLike[str], *, timeout: float = 20.0) -> App:
    """The demo form as an App, ready once it has written `state` with ready=true.

    Removes a stale `state` file first, so readiness always comes from the new process.
    """
    from gui_harness.desktop.virtual import App

    path = Path(state)
    path.unlink(missing_ok=True)
    return App(
        argv=[sys.executable, "-m", "gui_harness.demo.app", "--state", str(path)],
        ready=lambda: bool((read_state(path) or {}).get("ready")),
        timeout=timeout,
    )


def read_state(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The demo app's last report, or None before it wrote one. Never sees a half file."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))  # type: ignore[no-any-return]
    except FileNotFoundError:
        return None


class DemoForm:
    """The form: name, subscribe, colour, country and Save, reporting to `state_path`.

    The JSON holds `state` (the values as of the last Save; empty before one), `form`
    (the live widget values), `saved`, `saves`, every widget's screen geometry and every
    left click with the widget it hit.
    """

    def __init__(self, root: tk.Tk, state_path: Path) -> None:
        self.root = root
        self.state_path = state_path
        self.ready = False
        self.saves = 0
        self.clicks: list[dict[str, Any]] = []
        self._write_pending = False
        self.name = tk.StringVar(root, "")
        self.subscribe = tk.BooleanVar(root, False)
        self.choice = tk.StringVar(root, "")
        self.country = tk.StringVar(root, "")
        self.saved_values = self.values()
        self.status = tk.StringVar(root, "Not saved yet")
        self.widgets: dict[str, tk.Misc | str] = {}  # a str is a Tk path Python did not wrap
        self._build()
        for variable in (self.name, self.subscribe, self.choice, self.country):
            variable.trace_add("write", lambda *_: self.request_write())
        root.bind_all("<Button-1>", self._on_click, add="+")

    def values(self) -> dict[str, Any]:
        """The live form values, with no choice or country as None."""
        return {
            "name": self.name.get(),
            "subscribe": bool(self.subscribe.get()),
            "choice": self.choice.get() or None,
            "country": self.country.get() or None,
        }

    def save(self) -> None:
        """Commit the form: what Save does."""
        self.saves += 1
        self.saved_values = self.values()
        self.status.set(f"Saved ({self.saves})")
        self.write()

    def report(self) -> dict[str, Any]:
        """The JSON document written to the state file."""
        return {
            "ready": self.ready,
            "pid": os.getpid(),
            "saved": self.saves > 0,
            "saves": self.saves,
            "state": self.saved_values,
            "form": self.values(),
            "widgets": {
                name: _geometry(self.root, str(widget)) for name, widget in self.widgets.items()
            },
            "clicks": self.clicks,
        }

    def write(self) -> None:
        """Write the report atomically (temp file, then rename)."""
        if not self.ready:
            return
        temporary = self.state_path.with_name(f".{self.state_path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(self.report(), indent=1), encoding="utf-8")
        os.replace(temporary, self.state_path)

    def request_write(self) -> None:
        """Write once the current burst of events is handled."""
        if not self._write_pending:
            self._write_pending = True
            self.root.after_idle(self._flush)

    def _flush(self) -> None:
        self._write_pending = False
        self.write()

    def _on_click(self, event: tk.Event) -> None:
        names = {str(widget): name for name, widget in self.widgets.items()}
        hit = names.get(str(event.widget))
        self.clicks.append({"x_root": event.x_root, "y_root": event.y_root, "widget": hit})
        self.request_write()

    def _build(self) -> None:
        root = self.root
        root.title("Demo form")
        root.configure(background=_BACKGROUND)
        root.resizable(False, False)
        common: dict[str, Any] = {"background": _BACKGROUND, "foreground": _TEXT, "font": _FONT}
        label = {**common, "padx": 0}
        style = ttk.Style(root)
        style.theme_use("clam")  # the one built-in theme whose indicators can be made large
        for kind in ("TCheckbutton", "TRadiobutton"):
            style.configure(
                f"Demo.{kind}", background=_BACKGROUND, foreground=_TEXT, font=_FONT,
                indicatorsize=18, indicatormargin=(2, 2, 10, 2), padding=(2, 4),
            )  # fmt: skip
            style.map(f"Demo.{kind}", background=[("active", _BACKGROUND)])
        frame = tk.Frame(root, background=_BACKGROUND, padx=28, pady=22)
        frame.pack()
        frame.columnconfigure(1, weight=1)

        tk.Label(frame, text="Newsletter sign-up", **{**common, "font": _TITLE}).grid(
            row=0, column=0, columnspan=2, sticky="w", pady=(0, 16)
        )
        tk.Label(frame, text="Name", **label).grid(row=1, column=0, sticky="w", padx=(0, 16))
        name = tk.Entry(
            frame, textvariable=self.name, font=_FONT, width=22, relief="sunken", borderwidth=2,
            background="white", foreground=_TEXT, highlightthickness=1,
            highlightcolor=_ACCENT, insertwidth=2,
        )  # fmt: skip
        name.grid(row=1, column=1, sticky="we", pady=6, ipady=4)
        name.bind("<Control-a>", self._select_all)
        name.bind("<Control-A>", self._select_all)
        self.widgets["name"] = self.name_entry = name

        subscribe = ttk.Checkbutton(
            frame, text="Subscribe to the newsletter", variable=self.subscribe,
            style="Demo.TCheckbutton", takefocus=False,
        )  # fmt: skip
        subscribe.grid(row=2, column=1, sticky="w", pady=10)
        self.widgets["subscribe"] = subscribe

        tk.Label(frame, text="Colour", **label).grid(row=3, column=0, sticky="w", padx=(0, 16))
        colours = tk.Frame(frame, background=_BACKGROUND)
        colours.grid(row=3, column=1, sticky="w", pady=6)
        for colour in COLOURS:
            radio = ttk.Radiobutton(
                colours, text=colour.capitalize(), value=colour, variable=self.choice,
                style="Demo.TRadiobutton", takefocus=False,
            )  # fmt: skip
            radio.pack(side="left", padx=(0, 18))
            self.widgets[f"choice_{colour}"] = radio

        tk.Label(frame, text="Country", **label).grid(row=4, column=0, sticky="w", padx=(0, 16))
        self.country_box = ttk.Combobox(
            frame, textvariable=self.country, values=COUNTRIES, state="readonly", width=16,
            font=_FONT, height=8, takefocus=False,
        )  # fmt: skip
        self.country_box.grid(row=4, column=1, sticky="w", pady=6, ipady=2)
        # ttk draws its drop-down list in a popdown window of its own: name it for clicks.
        listbox = f"{self.root.tk.call('ttk::combobox::PopdownWindow', self.country_box)}.f.l"
        self.root.tk.call(listbox, "configure", "-font", _FONT)
        self.widgets["country"] = self.country_box
        self.widgets["country_list"] = listbox

        save = tk.Button(
            frame, text="Save", command=self.save, font=_BOLD, background=_ACCENT,
            foreground="white", activebackground="#1d4ed8", activeforeground="white",
            relief="raised", borderwidth=3, padx=26, pady=6, cursor="hand2",
        )  # fmt: skip
        save.grid(row=5, column=1, sticky="w", pady=(18, 4))
        self.widgets["save"] = save
        tk.Label(frame, textvariable=self.status, **{**common, "foreground": "#52606d"}).grid(
            row=6, column=1, sticky="w"
        )

    def _select_all(self, _event: object) -> str:
        # Tk's X11 Entry binds Control-a to "line start"; desktop users expect select-all.
        self.name_entry.selection_range(0, "end")
        self.name_entry.icursor("end")
        return "break"


def _geometry(root: tk.Tk, path: str) -> dict[str, int]:
    return {
        key: int(root.tk.call("winfo", query, path))
        for key, query in (("x", "rootx"), ("y", "rooty"), ("w", "width"), ("h", "height"))
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo form until its window closes or it gets SIGTERM/SIGINT; returns 0."""
    parser = argparse.ArgumentParser(prog="python -m gui_harness.demo.app", description=__doc__)
    parser.add_argument("--state", required=True, type=Path, help="JSON file to report to")
    parser.add_argument("--geometry", default="+40+40", help="Tk geometry, default +40+40")
    args = parser.parse_args(argv)

    root = tk.Tk(className="DemoForm")
    root.geometry(args.geometry)
    form = DemoForm(root, args.state)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    # Tk's event loop runs in C, so a Python signal handler alone would wait for the next
    # event; the wakeup fd makes the loop notice the signal at once.
    signal.set_wakeup_fd(wake_write)
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: None)

    def on_signal(*_: object) -> None:
        root.tk.deletefilehandler(wake_read)
        root.destroy()

    root.tk.createfilehandler(wake_read, tk.READABLE, on_signal)
    try:
        root.wait_visibility(root)
        root.update()
        root.focus_force()
        form.ready = True
        form.write()
        root.mainloop()
    finally:
        signal.set_wakeup_fd(-1)
        os.close(wake_read)
        os.close(wake_write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
