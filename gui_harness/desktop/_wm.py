"""The window manager a VirtualDesktop runs: openbox, started tethered, awaited by event.

Owns `start_window_manager` (start openbox with the bundled openbox.xml and wait until
it announces itself through _NET_SUPPORTING_WM_CHECK on the root window: a
PropertyNotify, never a sleep) and `find_window_manager`. Stopping it is the tether's
job, as for every process a VirtualDesktop starts.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import IO, Any

from gui_harness.desktop._tether import TetheredProcess
from gui_harness.errors import DesktopError, DesktopTimeout

__all__ = ["CONFIG", "WM_START_TIMEOUT_S", "find_window_manager", "start_window_manager"]

CONFIG = Path(__file__).with_name("openbox.xml")
"""The openbox configuration: one desktop, focus on new windows, click to focus,
smart placement, dialogs centred on their parent, no key bindings but window cycling."""
WM_START_TIMEOUT_S = 10.0


def find_window_manager() -> str | None:
    """The openbox executable on PATH, or None."""
    return shutil.which("openbox")


def start_window_manager(display: str, log: IO[bytes], *, timeout: float) -> TetheredProcess:
    """Start openbox on `display` and return it once it manages the screen.

    Raises DesktopError when openbox is not installed or exits while starting (another
    window manager runs there, say), DesktopTimeout when it does not announce itself
    within `timeout` seconds; the process is stopped then.
    """
    program = find_window_manager()
    if program is None:
        raise DesktopError(
            "no window manager: openbox is not installed (apt-get install openbox); "
            "pass window_manager=False to run without one"
        )
    import Xlib.display
    import Xlib.error
    from Xlib import X

    watcher = Xlib.display.Display(display)
    try:
        root = watcher.screen().root
        root.change_attributes(event_mask=X.PropertyChangeMask)
        watcher.sync()  # from here on every change of the root's properties is an event
        process = TetheredProcess(
            [program, "--config-file", str(CONFIG), "--sm-disable"],
            env=_environment(display),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            _await_announcement(watcher, root, process, log, timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError, OSError):
                process.stop_group(2.0)
            process.release()
            raise
        return process
    finally:
        with contextlib.suppress(Xlib.error.ConnectionClosedError, OSError):
            watcher.close()


def _environment(display: str) -> dict[str, str]:
    environment = {k: v for k, v in os.environ.items() if k != "DESKTOP_STARTUP_ID"}
    environment["DISPLAY"] = display
    return environment


def _await_announcement(
    connection: Any, root: Any, process: TetheredProcess, log: IO[bytes], timeout: float
) -> None:
    """Wait for a _NET_SUPPORTING_WM_CHECK on `root` naming a window that names itself."""
    from Xlib import X

    check = connection.intern_atom("_NET_SUPPORTING_WM_CHECK")
    deadline = time.monotonic() + timeout
    while not _announced(connection, root, check):
        code = process.poll()
        if code is not None:
            raise DesktopError(
                f"the window manager (openbox) exited with code {code} while starting; "
                f"output tail:\n{_tail(log)}"
            )
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DesktopTimeout(
                f"the window manager (openbox) did not announce itself within {timeout}s; "
                f"output tail:\n{_tail(log)}"
            )
        # wake on the next event, or now and then to notice an exit (no event for that)
        if not connection.pending_events():
            select.select([connection.fileno()], [], [], min(remaining, 0.2))
        while connection.pending_events():
            event = connection.next_event()
            if event.type == X.PropertyNotify and event.atom == check:
                break


def _announced(connection: Any, root: Any, check: int) -> bool:
    import Xlib.error
    from Xlib import Xatom

    try:
        prop = root.get_full_property(check, Xatom.WINDOW)
        if prop is None or not prop.value:
            return False
        window = connection.create_resource_object("window", int(prop.value[0]))
        own = window.get_full_property(check, Xatom.WINDOW)
    except Xlib.error.XError:  # a stale window id from an earlier manager
        return False
    return own is not None and bool(own.value) and int(own.value[0]) == window.id


def _tail(log: IO[bytes], chars: int = 2000) -> str:
    log.flush()
    log.seek(0, os.SEEK_END)
    size = log.tell()
    log.seek(max(0, size - chars))
    return log.read().decode(errors="replace").strip() or "(no output)"
