"""The one progress bar of long runs (evals, batches, benches): click's progressbar.

Owns drawing `done/total` and a note (e.g. how many succeeded) on one line of a terminal,
and drawing nothing at all on a pipe or a log file. `openprogram eval` and gui_harness's
batches use it (re-exported as openprogram.cli.Progress). Start at Progress.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

import click

__all__ = ["Progress"]


class Progress:
    """A bar of `total` steps, `done` of them already, on `stream` (default: stderr) when
    it is a terminal. `note(done, total)` is the text after the bar (default: "3/8").
    Call it with (done, total), as Dataset.evaluate's `progress` does, or `advance()`
    one step; `close()` ends the line."""

    def __init__(
        self,
        total: int,
        *,
        done: int = 0,
        stream: TextIO | None = None,
        note: Callable[[int, int], str] | None = None,
    ) -> None:
        stream = stream if stream is not None else sys.stderr
        self.total, self.done = total, done
        self._note = note or (lambda done, total: f"{done}/{total}")
        self._bar: Any = click.progressbar(
            length=max(total, 1),
            file=stream,
            hidden=not (stream.isatty() and total > 0),
            bar_template="[%(bar)s] %(info)s",
            fill_char="#",
            empty_char="-",
            width=30,
            show_eta=False,
            show_percent=False,
            show_pos=False,
            item_show_func=lambda _: self._note(self.done, self.total),
        )
        if done:
            self._bar.update(done)
        else:
            self._bar.render_progress()

    def __call__(self, done: int, total: int) -> None:
        """Show `done` of `total` (a `progress` callback)."""
        if self._bar is None:
            return
        self.total = total
        step, self.done = done - self.done, done
        self._bar.update(step)
        if done >= total:
            self.close()

    def advance(self) -> None:
        """One more step done."""
        if self._bar is None:
            return
        self.done += 1
        self._bar.update(1)

    def close(self) -> None:
        """End the bar's line (once)."""
        if self._bar is not None:
            self._bar.render_finish()
            self._bar = None
