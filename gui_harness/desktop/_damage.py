"""When an X screen stops changing after input: `DamageWatch`, fed by DAMAGE events.

Owns one X connection with a DAMAGE object on the root window (the server reports when
anything is drawn, in any window; one report until we read it, so an animation nobody
watches queues nothing) and the settle rule: after input, wait for the first change,
then for a quiet spell, during which a caller may take an early frame. X11Desktop marks
each action; settle.py decides when to ask.
"""

from __future__ import annotations

import collections
import contextlib
import select
import threading
import time
from collections.abc import Callable

import Xlib.display
import Xlib.error
from Xlib.ext import damage

from gui_harness._load import patience
from gui_harness.errors import DesktopError

__all__ = ["DamageWatch"]

QUIET_S = 0.025
"""How long the screen must stay unchanged to count as settled: more than one 60 Hz
frame, so a browser drawing a transition frame by frame is not taken as still."""
_FIRST_MIN_S = 0.05  # the shortest wait for an action's first change
_FIRST_MAX_S = 0.5
_FIRST_FACTOR = 4  # the wait for a first change: this many times the slowest one seen lately
_REMEMBERED = 8
_EARLY_AFTER_S = 0.005  # quiet this long after a change: the drawing burst is over
_EARLY_TIMES = 2  # early frames per settle at most: an animation would make each a waste


class DamageWatch:
    """Changes on the X display `display`, as DAMAGE events on its own connection.

    `mark()` before sending input forgets older changes; `settle()` after it waits for
    the screen to change and then hold still. The wait for a first change adapts to how
    fast this display's apps have answered lately. Raises DesktopError when the display
    lacks the DAMAGE extension. Safe to share between threads (one settle at a time).
    """

    def __init__(self, display: str) -> None:
        try:
            self._x = Xlib.display.Display(display)
        except (Xlib.error.DisplayError, Xlib.error.ConnectionClosedError) as exc:
            raise DesktopError(f"X display {display!r} is not reachable: {exc}") from exc
        if not self._x.has_extension("DAMAGE"):
            self._x.close()
            raise DesktopError(f"X display {display!r} lacks the DAMAGE extension")
        self._x.damage_query_version()  # the server checks a client asked first
        self._damage = self._x.screen().root.damage_create(damage.DamageReportNonEmpty)
        self._x.sync()
        self._event = self._x.extension_event.DamageNotify
        self._lock = threading.RLock()
        self._changes = 0
        self._latencies: collections.deque[float] = collections.deque(maxlen=_REMEMBERED)

    def mark(self) -> None:
        """Forget the changes so far: what comes after is the next action's doing."""
        with self._lock:
            self._drain()

    def settle(
        self,
        *,
        timeout: float,
        quiet: float | None = None,
        early: Callable[[], object] | None = None,
    ) -> bool:
        """Wait until the screen changed and then stayed unchanged for `quiet` seconds,
        or saw no change at all within the adaptive first-change wait; True then.
        False when `timeout` seconds pass first (an animation that never stops).

        `quiet` defaults to QUIET_S, whatever the machine's load (the demo and MiniWoB
        pages in Chromium settle right at a load average of 11–19 on 2 CPUs). The wait
        for the first change is stretched by the load (gui_harness._load.patience): a
        busy app that repaints after it would be taken as unchanged, and the next look
        taken before its change.
        `early` is called (on this thread, at most twice) once the screen has been quiet
        for a few milliseconds, so work on the frame overlaps the rest of the quiet
        spell; its time counts towards the spell. Whether that frame is still the screen
        is `changed_since(count)`'s answer, with `count` read before the frame was taken.
        """
        with self._lock:
            start = time.monotonic()
            deadline = start + timeout
            first_wait = self.first_wait * patience()
            if quiet is None:
                quiet = QUIET_S
            last: float | None = None
            early_for: float | None = None
            earlies = 0
            while True:
                now = time.monotonic()
                until = start + first_wait if last is None else last + quiet
                due = early is not None and last is not None and last != early_for
                if due and earlies < _EARLY_TIMES:
                    assert early is not None and last is not None  # due says so
                    if now - last >= min(_EARLY_AFTER_S, quiet):
                        early_for = last
                        earlies += 1
                        early()
                        continue
                    until = min(until, last + min(_EARLY_AFTER_S, quiet))  # wake for it
                if until <= min(now, deadline):
                    # a change already sent (while early() ran longer than the spell, on a
                    # loaded machine) means the screen was not still after all
                    if not self._drain():
                        return True
                elif now >= deadline:
                    return False
                elif not (self._drain() or self._wait(min(until, deadline) - now)):
                    continue
                changed = time.monotonic()
                if last is None:
                    self._latencies.append(changed - start)
                last = changed

    @property
    def changes(self) -> int:
        """How many DAMAGE reports this watch has read so far (not draining new ones)."""
        return self._changes

    def changed_since(self, count: int) -> bool:
        """Whether the screen changed after `changes` was `count`: a round trip to the
        server first, so every drawing it did before now has been reported."""
        with self._lock:
            try:
                self._x.sync()
            except (Xlib.error.ConnectionClosedError, OSError) as exc:
                raise DesktopError(f"lost the X display while watching it: {exc}") from exc
            self._drain()
            return self._changes != count

    @property
    def first_wait(self) -> float:
        """Seconds settle() waits for an action's first change before calling the screen
        still, on an idle machine: a few times the slowest answer lately, within fixed
        bounds (settle() stretches it by the machine's load)."""
        if not self._latencies:
            return 2 * _FIRST_MIN_S
        return min(_FIRST_MAX_S, max(_FIRST_MIN_S, _FIRST_FACTOR * max(self._latencies)))

    def close(self) -> None:
        """Close the connection (the server frees the DAMAGE object). Safe to call twice."""
        # a server already gone has freed it all
        with self._lock, contextlib.suppress(Xlib.error.ConnectionClosedError, OSError):
            self._x.close()

    def _drain(self) -> int:
        """Read the events already sent; the number of them that were changes."""
        changes = 0
        try:
            while self._x.pending_events():
                event = self._x.next_event()
                if event.type & 0x7F == self._event:
                    changes += 1
            if changes:  # empty the damage, so the next drawing is reported again
                self._changes += changes
                self._x.damage_subtract(self._damage)
                # a round trip: until the server has emptied it, a drawing (another
                # client's, right after a mark) joins the damage already reported and
                # sends no report of its own
                self._x.sync()
        except (Xlib.error.ConnectionClosedError, OSError) as exc:
            raise DesktopError(f"lost the X display while watching it: {exc}") from exc
        return changes

    def _wait(self, seconds: float) -> int:
        """Wait up to `seconds` for events; the number of changes among them."""
        readable, _, _ = select.select([self._x.fileno()], [], [], max(0.0, seconds))
        return self._drain() if readable else 0
