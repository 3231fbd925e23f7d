"""The D-Bus buses accessibility needs: a private session bus and the AT-SPI bus on it.

Owns `SessionBus` (a dbus-daemon a VirtualDesktop starts, with accessibility switched on),
`find_accessibility_bus()` (where an existing display's AT-SPI bus is) and
`ACCESSIBILITY_ENV`, the environment that makes toolkits expose their trees. Reading the
trees is gui_harness.perception.tree.accessibility's job.
"""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

from gui_harness.desktop._tether import TetheredProcess, group_gone
from gui_harness.errors import DesktopError, DesktopTimeout
from openprogram.echo import echo

__all__ = [
    "ACCESSIBILITY_ENV",
    "CHROMIUM_ACCESSIBILITY_FLAG",
    "JAVA_ATK_WRAPPER",
    "SessionBus",
    "find_accessibility_bus",
    "java_accessibility_options",
    "with_accessibility_flag",
]

ACCESSIBILITY_ENV: Mapping[str, str] = {
    # Qt exposes its tree only when it sees a screen reader, unless told to always.
    "QT_LINUX_ACCESSIBILITY_ALWAYS_ON": "1",
    "QT_ACCESSIBILITY": "1",
    # Chromium and Electron read this to load their AT-SPI bridge; the renderer's tree
    # needs CHROMIUM_ACCESSIBILITY_FLAG as well.
    "ACCESSIBILITY_ENABLED": "1",
    # GTK 4 picks its accessibility backend from this; GTK 3 (and so wxGTK) always loads
    # its bridge.
    "GTK_A11Y": "atspi",
    # Firefox (Gecko) starts its accessibility service when this says so, whatever
    # GSettings says; GTK 2 apps load their bridge on it; Java's ATK wrapper reads it.
    "GNOME_ACCESSIBILITY": "1",
}
"""Environment a VirtualDesktop gives its apps so that GTK, Qt, wx, Firefox and
Chromium/Electron publish their accessibility trees (Java: java_accessibility_options();
Tk 8.6 has no accessibility support to switch on)."""

JAVA_ATK_WRAPPER = "/usr/share/java/java-atk-wrapper.jar"
"""Debian's ATK wrapper for Java (libatk-wrapper-java): Swing's bridge to AT-SPI."""


def java_accessibility_options(
    jar: str = JAVA_ATK_WRAPPER, *, java: str | None = None
) -> str | None:
    """The JAVA_TOOL_OPTIONS that make a Java (Swing, AWT) app load the ATK wrapper, or
    None when it is not installed for the `java` on PATH.

    Debian ships the wrapper switched off (accessibility.properties has its
    assistive_technologies line commented out), and an app started with `-jar` ignores
    CLASSPATH: the options name the wrapper as the assistive technology and append its
    jar to the boot class path, where the JDK's own library folder (which Debian's
    libatk-wrapper-java-jni links libatk-wrapper.so into) is where it finds its native
    half. A JDK without that library gets no options: naming a wrapper it cannot load
    would stop every AWT app at start."""
    if not Path(jar).is_file():
        return None
    program = java or shutil.which("java")
    if program is None:
        return None
    home = Path(program).resolve().parent.parent
    if not (home / "lib" / "libatk-wrapper.so").exists():
        return None
    return (
        "-Djavax.accessibility.assistive_technologies=org.GNOME.Accessibility.AtkWrapper "
        f"-Xbootclasspath/a:{jar}"
    )


CHROMIUM_ACCESSIBILITY_FLAG = "--force-renderer-accessibility"
"""The command-line switch without which Chromium and Electron publish no page elements."""

_CHROMIUM_NAMES = frozenset(
    {
        "chromium",
        "chromium-browser",
        "chrome",
        "google-chrome",
        "google-chrome-stable",
        "microsoft-edge",
        "brave-browser",
        "electron",
    }
)
# Files that sit beside every Chromium or Electron executable, whatever it is called.
_CHROMIUM_FILES = ("resources.pak", "v8_context_snapshot.bin", "snapshot_blob.bin")
_START_TIMEOUT_S = 10.0
_CALL_TIMEOUT_S = 5.0
_STOP_TIMEOUT_S = 5.0


def with_accessibility_flag(argv: Sequence[str]) -> list[str]:
    """`argv` with CHROMIUM_ACCESSIBILITY_FLAG added when it starts Chromium or Electron
    (known names, or an executable with Chromium's resource files beside it)."""
    argv = [str(arg) for arg in argv]
    if not argv or CHROMIUM_ACCESSIBILITY_FLAG in argv or not _is_chromium(argv[0]):
        return argv
    return [argv[0], CHROMIUM_ACCESSIBILITY_FLAG, *argv[1:]]


def _is_chromium(program: str) -> bool:
    if Path(program).name in _CHROMIUM_NAMES:
        return True
    found = shutil.which(program)
    if found is None:
        return False
    folder = Path(found).resolve().parent
    return any((folder / name).exists() for name in _CHROMIUM_FILES)


class SessionBus:
    """A private D-Bus session bus (dbus-daemon) for one X display, with the AT-SPI bus on.

    start() runs `dbus-daemon --session` in its own process group, so the AT-SPI bus
    launcher and registry it activates are stopped with it by close(), or, should the
    owning process die without closing it (SIGKILL), by the group's watcher (see
    _tether.TetheredProcess). Raises DesktopError
    when dbus-daemon is missing or exits, DesktopTimeout when it does not answer.
    """

    def __init__(self, display: str) -> None:
        self.display = display
        self.address: str | None = None
        """The session bus address once started."""
        self.accessibility_address: str | None = None
        """The AT-SPI bus address once start() switched accessibility on."""
        self.pid: int | None = None
        self._process: TetheredProcess | None = None

    def __repr__(self) -> str:
        return f"SessionBus(display={self.display!r}, address={self.address!r})"

    @property
    def env(self) -> dict[str, str]:
        """What an app needs to find these buses, plus ACCESSIBILITY_ENV and, where
        Debian's ATK wrapper is installed, the JAVA_TOOL_OPTIONS that load it.

        No AT_SPI_BUS_ADDRESS: apps find the AT-SPI bus as in a desktop session, by the
        AT_SPI_BUS property the launcher puts on the root window or by asking the session
        bus (org.a11y.Bus.GetAddress). With it set, Qt 6.4 connects to the bus but never
        registers its tree: its DBusConnection announces the bus from its constructor,
        before the bridge listens, and nothing announces it again. Set empty, GTK 4.8
        finds no bus at all. An inherited value must be removed (VirtualDesktop does).
        """
        env = dict(ACCESSIBILITY_ENV)
        java = java_accessibility_options()
        if java is not None:
            env["JAVA_TOOL_OPTIONS"] = java
        if self.address is not None:
            env["DBUS_SESSION_BUS_ADDRESS"] = self.address
        return env

    def start(self, log: IO[bytes]) -> None:
        """Start dbus-daemon, then the AT-SPI bus with IsEnabled set; output goes to `log`."""
        daemon = shutil.which("dbus-daemon")
        if daemon is None:
            raise DesktopError(
                "dbus-daemon is not installed (no 'dbus-daemon' on PATH); install it with "
                "`apt-get install dbus-daemon at-spi2-core`, or pass accessibility=False"
            )
        read_fd, write_fd = os.pipe()
        environment = {**os.environ, "DISPLAY": self.display}
        # Activated services (the AT-SPI launcher) must not join a bus of the caller's.
        for name in ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "NO_AT_BRIDGE"):
            environment.pop(name, None)
        try:
            self._process = TetheredProcess(
                [daemon, "--session", "--nofork", "--nopidfile", f"--print-address={write_fd}"],
                pass_fds=(write_fd,),
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            self.pid = self._process.pid
            os.close(write_fd)
            write_fd = -1
            self.address = _read_line(read_fd, self._process, "dbus-daemon")
        finally:
            os.close(read_fd)
            if write_fd >= 0:
                os.close(write_fd)
        self.accessibility_address = enable_accessibility(self.address)

    def close(self) -> None:
        """Stop the bus and everything it activated (its whole process group), and wait
        until all of them have exited, not only dbus-daemon: SIGKILL after
        _STOP_TIMEOUT_S."""
        process, self._process = self._process, None
        if process is None:
            return
        try:
            if process.returncode is None:
                _stop_group(process)
        finally:
            process.release()  # a group left behind is now the watcher's to end


def _stop_group(process: TetheredProcess) -> None:
    process.stop_group(_STOP_TIMEOUT_S)
    # the AT-SPI launcher, its bus and registry are not our children: they exit on
    # their own time, and the next desktop must not meet them
    if not group_gone(process.pid, _STOP_TIMEOUT_S):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        group_gone(process.pid, _STOP_TIMEOUT_S)


def enable_accessibility(session_address: str, *, timeout: float = _CALL_TIMEOUT_S) -> str:
    """Set org.a11y.Status.IsEnabled on the session bus at `session_address` (starting
    the AT-SPI bus launcher if needed) and return the AT-SPI bus address."""
    jeepney, blocking = _jeepney()
    status = jeepney.DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus")
    try:
        with blocking.open_dbus_connection(session_address, auth_timeout=timeout) as bus:
            enable = jeepney.Properties(
                jeepney.DBusAddress(
                    "/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Status"
                )
            ).set("IsEnabled", "b", True)
            _checked(bus.send_and_get_reply(enable, timeout=timeout), "IsEnabled")
            call = jeepney.new_method_call(status.with_interface("org.a11y.Bus"), "GetAddress")
            reply = _checked(bus.send_and_get_reply(call, timeout=timeout), "GetAddress")
    except TimeoutError as exc:
        raise DesktopTimeout(
            f"the AT-SPI bus launcher did not answer on {session_address!r} within "
            f"{timeout}s; is at-spi2-core installed (`apt-get install at-spi2-core`)?"
        ) from exc
    except OSError as exc:
        raise DesktopError(f"cannot reach the session bus {session_address!r}: {exc}") from exc
    return str(reply[0])


def find_accessibility_bus(display: str, *, timeout: float = 1.0) -> str | None:
    """The AT-SPI bus address for apps on X display `display`, or None when it has none.

    Looks where AT-SPI's own clients look: $AT_SPI_BUS_ADDRESS, then the AT_SPI_BUS
    property the launcher sets on the display's root window, then (only for the display
    in $DISPLAY) the session bus in $DBUS_SESSION_BUS_ADDRESS. Never raises for a
    missing or silent bus; `timeout` (seconds) bounds the session bus call.
    """
    address = os.environ.get("AT_SPI_BUS_ADDRESS")
    if address and display == os.environ.get("DISPLAY"):
        return address
    address = _root_property(display)
    if address:
        return address
    session = os.environ.get("DBUS_SESSION_BUS_ADDRESS")
    if not session or display != os.environ.get("DISPLAY"):
        return None
    jeepney, blocking = _jeepney()
    call = jeepney.new_method_call(
        jeepney.DBusAddress("/org/a11y/bus", bus_name="org.a11y.Bus", interface="org.a11y.Bus"),
        "GetAddress",
    )
    try:
        with blocking.open_dbus_connection(session, auth_timeout=timeout) as bus:
            reply = bus.send_and_get_reply(call, timeout=timeout)
    except (OSError, TimeoutError, RuntimeError, ValueError):
        return None
    if reply.header.message_type != jeepney.MessageType.method_return:
        return None
    return str(reply.body[0]) or None


def _root_property(display: str) -> str | None:
    import Xlib.display
    import Xlib.error

    host, _, number = display.partition(":")
    local = Path(f"/tmp/.X11-unix/X{number.split('.')[0]}")
    if not host and not local.exists():
        return None  # no such display here (python-xlib would leak sockets finding that out)

    try:
        connection = Xlib.display.Display(display)
    except (Xlib.error.DisplayError, OSError):
        return None
    try:
        root = connection.screen().root
        atom = connection.intern_atom("AT_SPI_BUS", only_if_exists=True)
        if not atom:
            return None
        value = root.get_full_property(atom, 0)
        if value is None or not value.value:
            return None
        data = value.value
        return data.decode() if isinstance(data, bytes) else str(data)
    except Xlib.error.XError:
        return None
    finally:
        connection.close()


def _checked(reply: Any, what: str) -> Any:
    import jeepney

    if reply.header.message_type == jeepney.MessageType.error:
        name = reply.header.fields.get(jeepney.HeaderFields.error_name, "?")
        raise DesktopError(f"the AT-SPI bus launcher refused {what}: {name} {echo(reply.body)}")
    return reply.body


def _jeepney() -> tuple[Any, Any]:
    try:
        import jeepney
        import jeepney.io.blocking
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ImportError(
            f"accessibility needs the gui extra ({exc.name} is missing): "
            'pip install "openprogram[gui]"'
        ) from exc
    return jeepney, jeepney.io.blocking


def _read_line(fd: int, process: subprocess.Popen[bytes], name: str) -> str:
    """Read the line `process` writes to `fd` once it is ready."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    data = b""
    while not data.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DesktopTimeout(f"{name} did not report its address within {_START_TIMEOUT_S}s")
        readable, _, _ = select.select([fd], [], [], remaining)
        if not readable:
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(_STOP_TIMEOUT_S)
            raise DesktopError(f"{name} exited (code {process.returncode}) while starting")
        data += chunk
    return data.decode().strip()
