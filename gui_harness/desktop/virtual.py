"""VirtualDesktop: a private Xvfb display with its apps, started and torn down as one.

Owns the processes (Xvfb, the window manager, the session bus with accessibility on, then
each App) and their readiness; capture and input are delegated to an X11Desktop on the new
display, the buses to buses.SessionBus, openbox to _wm. Start at VirtualDesktop.start().
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING

from gui_harness.desktop._tether import TetheredProcess
from gui_harness.desktop._wm import WM_START_TIMEOUT_S, find_window_manager, start_window_manager
from gui_harness.desktop.buses import SessionBus, with_accessibility_flag
from gui_harness.desktop.x11 import X11Desktop
from gui_harness.errors import DesktopError, DesktopTimeout
from openprogram.errors import UsageError

if TYPE_CHECKING:
    from PIL import Image

    from gui_harness.actions import Action

__all__ = ["App", "AppSpec", "VirtualDesktop"]

_XVFB_START_TIMEOUT_S = 10.0
# -noreset: keep server state when the last client leaves; -br: a black root instead of
# the default stipple, which a detector would take for texture; -dpi: stable font sizes.
_XVFB_OPTIONS = ("-nolisten", "tcp", "-noreset", "-br", "-dpi", "96")
_STOP_TIMEOUT_S = 5.0
# Xvfb has no GPU: GTK 4's default GL renderer runs on Mesa's software GL, where a frame
# of a large window takes longer than the frame interval, so an app that animates
# anything (a spinner, a pulsing progress bar) is always due a frame and its main loop
# never goes idle. GTK 4.8 registers with the AT-SPI registry from an idle callback, so
# such an app (gtk4-widget-factory) never published its tree, or answered each call only
# between frames. Its cairo renderer draws the same widgets at a fraction of the cost.
_APP_ENV = {"GSK_RENDERER": "cairo"}
_POLL_S = 0.05
_TAIL_CHARS = 2000


@dataclass(frozen=True)
class App:
    """One program to run on a VirtualDesktop.

    `ready` is polled (no arguments) until it returns True; by default the app is ready
    once a viewable top-level window belongs to its process group. `timeout` is seconds.
    `env` is added to the inherited environment; DISPLAY is always the virtual one.
    """

    argv: Sequence[str]
    ready: Callable[[], bool] | None = None
    timeout: float = 15.0
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None


AppSpec = App | Sequence[str] | Callable[[str], App | Sequence[str]]
"""An App, a bare argv, or a callable given the display name (":N") returning either."""


class VirtualDesktop:
    """A private Xvfb screen of `size` pixels running `apps`, usable as a Desktop.

    Use it as a context manager (or call start() and close()). Starting waits for Xvfb
    (through -displayfd, no fixed sleeps) and then for each app to be ready, in order.
    On any failure while starting, and on close, every process it started is stopped
    (apps in reverse order, then the bus, then Xvfb). Raises DesktopError when Xvfb is
    missing or an app exits early, DesktopTimeout when something is not ready in time.

    With `accessibility` (the default) it also starts a private D-Bus session bus with
    the AT-SPI bus switched on, gives its apps the environment that makes GTK, Qt, wx,
    Java (Debian's ATK wrapper), Firefox and Chromium/Electron publish their
    accessibility trees (buses.SessionBus.env), and adds
    `--force-renderer-accessibility` to Chromium and Electron command lines. When that
    cannot start (no dbus-daemon, no at-spi2-core) the desktop still runs, without it,
    and `accessibility_note` says why.
    """

    def __init__(
        self,
        size: tuple[int, int] = (1280, 800),
        apps: Sequence[AppSpec] = (),
        *,
        depth: int = 24,
        accessibility: bool = True,
        window_manager: bool = True,
    ) -> None:
        width, height = size
        if width <= 0 or height <= 0:
            raise UsageError(f"size={size!r} must be two positive pixel counts")
        if depth not in (8, 16, 24):
            raise UsageError(f"depth={depth!r} is not one of 8, 16, 24")
        self._requested_size = (int(width), int(height))
        self._depth = depth
        self._specs = list(apps)
        self.display: str | None = None
        """The X display name (":N") once started."""
        self.pids: list[int] = []
        """Every process started, Xvfb first; kept after close() for inspection."""
        self._xvfb: TetheredProcess | None = None
        self._window_manager = window_manager
        self._wm: TetheredProcess | None = None
        self.wm_pid: int | None = None
        """The window manager's process (None without one); kept after close()."""
        self.window_manager_note: str | None = None
        """Why this desktop runs no window manager (None when it runs one, or before start)."""
        self._apps: list[TetheredProcess] = []
        self._logs: list[IO[bytes]] = []
        self._desktop: X11Desktop | None = None
        self._started = False
        self._accessibility = accessibility
        self._bus: SessionBus | None = None
        self.accessibility_note: str | None = None
        """Why this desktop has no accessibility bus (None when it has one, or before start)."""
        self.bus_pid: int | None = None
        """The private session bus's dbus-daemon (its process group holds the AT-SPI bus
        it started); kept after close() for inspection. `pids` are Xvfb and the apps."""

    def __repr__(self) -> str:
        return f"VirtualDesktop(size={self._requested_size!r}, display={self.display!r})"

    def __enter__(self) -> VirtualDesktop:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def desktop(self) -> X11Desktop:
        """The X11Desktop on this display; raises DesktopError before start()."""
        if self._desktop is None:
            raise DesktopError(f"{self!r} is not running; call start() or use it in a with block")
        return self._desktop

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) of the screen in pixels."""
        return self.desktop.size if self._desktop is not None else self._requested_size

    @property
    def accessibility_bus(self) -> str | None:
        """The address of this display's AT-SPI bus, or None (see accessibility_note)."""
        return self._bus.accessibility_address if self._bus is not None else None

    @property
    def env(self) -> dict[str, str]:
        """The environment variables this desktop gives its apps (on top of os.environ):
        the buses' (SessionBus.env), DISPLAY, and GSK_RENDERER=cairo (GTK 4 renders in
        software here; with GL an animating app never goes idle and never publishes its
        tree). An App's own `env` overrides them."""
        if self.display is None:
            raise DesktopError(f"{self!r} is not running; call start() or use it in a with block")
        env = self._bus.env if self._bus is not None else {}
        return {**_APP_ENV, **env, "DISPLAY": self.display}

    def app_env(self) -> dict[str, str]:
        """The whole environment for a process started on this desktop (an app, a
        command, a browser's driver): os.environ without what would lead it elsewhere,
        then `env`. With this desktop's buses, a caller's session and AT-SPI bus
        addresses are dropped (an inherited AT_SPI_BUS_ADDRESS sends a Qt 6 app's tree
        to the caller's bus, or to none: see SessionBus.env); always, opencv-python's Qt
        plugin paths (no Qt app starts with them). JAVA_TOOL_OPTIONS the caller set
        are kept, before the ATK wrapper's."""
        environment = _inherited_environment()
        if self._bus is not None:
            for name in _BUS_VARIABLES:
                environment.pop(name, None)
        env = self.env
        inherited_java = environment.get("JAVA_TOOL_OPTIONS")
        if inherited_java and "JAVA_TOOL_OPTIONS" in env:  # the caller's options stay too
            env["JAVA_TOOL_OPTIONS"] = f"{inherited_java} {env['JAVA_TOOL_OPTIONS']}"
        return {**environment, **env}

    def screenshot(self) -> Image.Image:
        """Capture the whole virtual screen as an RGB image."""
        return self.desktop.screenshot()

    def grab(self, box: tuple[int, int, int, int]) -> Image.Image:
        """Capture the part `box` = (x, y, width, height) of the screen (see
        X11Desktop.grab)."""
        return self.desktop.grab(box)

    def execute(self, action: Action) -> None:
        """Perform one action in screen pixels (see X11Desktop.execute)."""
        self.desktop.execute(action)

    def wait_settled(self, *, timeout: float) -> bool:
        """Wait for the screen to settle after the latest action (see X11Desktop)."""
        return self.desktop.wait_settled(timeout=timeout)

    def add_frame_listener(self, listener: Callable[[Image.Image], object]) -> None:
        """Have `listener` called with each frame taken while the screen settles (see
        X11Desktop.add_frame_listener)."""
        self.desktop.add_frame_listener(listener)

    def remove_frame_listener(self, listener: Callable[[Image.Image], object]) -> None:
        """Stop calling `listener` (see X11Desktop.remove_frame_listener)."""
        self.desktop.remove_frame_listener(listener)

    def start(self) -> None:
        """Start Xvfb and every app, waiting for each to be ready; stop them all on failure."""
        if self._started:
            raise UsageError(f"{self!r} was already started; a VirtualDesktop runs once")
        self._started = True
        try:
            self._start_xvfb()
            assert self.display is not None
            if self._window_manager:
                self._start_window_manager()
            elif self.window_manager_note is None:
                self.window_manager_note = "window_manager=False was passed to VirtualDesktop"
            self._desktop = X11Desktop(self.display)
            if self._accessibility:
                self._start_bus()
            elif self.accessibility_note is None:
                self.accessibility_note = "accessibility=False was passed to VirtualDesktop"
            for spec in self._specs:
                self._start_app(_resolve(spec, self.display))
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Stop every app (terminate, then kill), the bus, the window manager, then Xvfb,
        and close pipes and logs."""
        if self._desktop is not None:
            self._desktop.close()
            self._desktop = None
        while self._apps:
            _stop(self._apps.pop())
        if self._bus is not None:
            self._bus.close()
            self._bus = None
        if self._wm is not None:
            _stop(self._wm)
            self._wm = None
        if self._xvfb is not None:
            _stop(self._xvfb)
            self._xvfb = None
        while self._logs:
            self._logs.pop().close()

    # -- internals -----------------------------------------------------------------------

    def _new_log(self) -> IO[bytes]:
        log = tempfile.TemporaryFile()  # noqa: SIM115 - lives until close(), which closes it
        self._logs.append(log)
        return log

    def _start_xvfb(self) -> None:
        xvfb = shutil.which("Xvfb")
        if xvfb is None:
            raise DesktopError(
                "Xvfb is not installed (no 'Xvfb' on PATH); install it with `apt-get install xvfb`"
            )
        width, height = self._requested_size
        screen = f"{width}x{height}x{self._depth}"
        log = self._new_log()
        read_fd, write_fd = os.pipe()
        try:
            self._xvfb = TetheredProcess(
                [xvfb, "-displayfd", str(write_fd), *_XVFB_OPTIONS, "-screen", "0", screen],
                pass_fds=(write_fd,),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            self.pids.append(self._xvfb.pid)
            os.close(write_fd)
            write_fd = -1
            number = _read_display_number(read_fd, self._xvfb, log)
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.display = f":{number}"

    def _start_window_manager(self) -> None:
        assert self.display is not None
        if find_window_manager() is None:  # the desktop works without one, as bare Xvfb
            self.window_manager_note = (
                "no window manager: openbox is not installed (apt-get install openbox); "
                "windows are undecorated and focus follows no rules"
            )
            return
        self._wm = start_window_manager(self.display, self._new_log(), timeout=WM_START_TIMEOUT_S)
        self.wm_pid = self._wm.pid

    def _start_bus(self) -> None:
        assert self.display is not None
        bus = SessionBus(self.display)
        try:
            bus.start(self._new_log())
        except DesktopError as exc:  # the desktop works without it: perception uses pixels
            bus.close()
            self.accessibility_note = f"no accessibility bus: {exc}"
            return
        self._bus = bus
        self.bus_pid = bus.pid

    def _start_app(self, app: App) -> None:
        assert self.display is not None and self._desktop is not None
        argv = [str(arg) for arg in app.argv]
        if self._bus is not None:
            argv = with_accessibility_flag(argv)
        log = self._new_log()
        try:
            process = TetheredProcess(
                argv,
                env={**self.app_env(), **app.env, "DISPLAY": self.display},
                cwd=app.cwd,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            raise DesktopError(f"cannot start app {argv!r}: {exc}") from exc
        self.pids.append(process.pid)
        self._apps.append(process)
        ready = app.ready or (lambda: self._has_window(process.pid))
        deadline = time.monotonic() + app.timeout
        while not ready():
            code = process.poll()
            if code is not None:
                raise DesktopError(
                    f"app {argv!r} exited with code {code} before it was ready on "
                    f"{self.display}; output tail:\n{_tail(log)}\n"
                    f"hint: run it by hand with DISPLAY={self.display} to see why"
                )
            if time.monotonic() > deadline:
                raise DesktopTimeout(
                    f"app {argv!r} was not ready within {app.timeout}s on {self.display}; "
                    f"output tail:\n{_tail(log)}\nhint: raise App(timeout=...), or pass "
                    "App(ready=...) if it opens no top-level window of its own"
                )
            time.sleep(_POLL_S)

    def _has_window(self, pid: int) -> bool:
        assert self._desktop is not None
        for window in self._desktop.visible_windows():
            if window.pid is None:
                continue
            with contextlib.suppress(ProcessLookupError):
                if window.pid == pid or os.getpgid(window.pid) == pid:
                    return True
        return False


_BUS_VARIABLES = ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE")


def _inherited_environment() -> dict[str, str]:
    """os.environ without what opencv-python puts there on import: its Qt plugin and font
    paths (into its wheel), with which every Qt app fails to start ("could not load the
    Qt platform plugin xcb")."""
    return {
        name: value
        for name, value in os.environ.items()
        if not (name.startswith("QT_QPA_") and f"{os.sep}cv2{os.sep}" in value)
    }


def _resolve(spec: AppSpec, display: str) -> App:
    if isinstance(spec, App):
        return spec
    if isinstance(spec, str):
        raise UsageError(f"app {spec!r} is a string; pass an argv list such as {spec.split()!r}")
    if callable(spec):
        return _resolve(spec(display), display)
    return App(argv=list(spec))


def _read_display_number(fd: int, process: subprocess.Popen[bytes], log: IO[bytes]) -> int:
    """Read the display number Xvfb writes to -displayfd once it accepts connections."""
    deadline = time.monotonic() + _XVFB_START_TIMEOUT_S
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DesktopTimeout(
                f"Xvfb did not report a display within {_XVFB_START_TIMEOUT_S}s; "
                f"output tail:\n{_tail(log)}"
            )
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 64)
        if not chunk:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_STOP_TIMEOUT_S)
            raise DesktopError(
                f"Xvfb exited (code {process.returncode}) while starting; output tail:\n"
                f"{_tail(log)}"
            )
        data += chunk
    return int(data.strip())


def _stop(process: TetheredProcess) -> None:
    """Terminate its process group, wait, then kill; then release the group's tether."""
    try:
        if process.returncode is None:
            process.stop_group(_STOP_TIMEOUT_S)
    finally:
        process.release()  # what is left of the group (an app's children) is the watcher's


def _tail(log: IO[bytes]) -> str:
    log.flush()
    log.seek(0, os.SEEK_END)
    size = log.tell()
    log.seek(max(0, size - _TAIL_CHARS))
    text = log.read().decode(errors="replace").strip()
    return text or "(no output)"
