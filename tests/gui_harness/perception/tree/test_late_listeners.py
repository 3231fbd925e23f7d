"""A Qt app that started while the source's watch registered (issue 44): Qt asks the
AT-SPI registry which events are listened for, then subscribes to its news of new
listeners; a watch that registers between the two goes unheard, and the app sends none
of the events a kept tree is brought up to date by. Here that instant is made to happen:
the registry is held (SIGSTOP) until the app's question waits for it, the app is held
while the watch registers. The source's first read tells the app again
(_tree_settle.announcement), so a page the app then switches to silently is not left
out of a kept tree."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gui_harness.desktop.virtual import VirtualDesktop
from gui_harness.perception.tree._atspi import REGISTRY, ROOT, call, process_of
from tests.gui_harness.perception.tree.test_desktop_accessibility import labelled, wait_for
from tests.gui_harness.perception.tree.test_qt6_states import (
    _FORM,
    _PYTHON,
    _click_until,
    _source,
    _tabs,
)
from tests.gui_harness.perception.tree.test_qt6_states import pytestmark as pytestmark


def _registry(address: str) -> int:
    """The pid of the AT-SPI registry on the bus at `address` (started if need be)."""
    from jeepney.io.blocking import open_dbus_connection

    with open_dbus_connection(address) as bus:
        bus.send_and_get_reply(call(REGISTRY, ROOT, "org.a11y.atspi.Accessible", "GetChildren"))
        return int(bus.send_and_get_reply(process_of(REGISTRY), timeout=30).body[0])


@contextlib.contextmanager
def _held(pid: int) -> Iterator[None]:
    """Process `pid` stopped, continued on leaving."""
    os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


def _asks_registry(address: str, start: Any) -> subprocess.Popen[bytes]:
    """Runs `start()` (starting the app) and returns once a call of the app's asking the
    registry which events are listened for is on the bus (a monitor sees it)."""
    from jeepney import DBusAddress, HeaderFields, MessageType, new_method_call
    from jeepney.io.blocking import open_dbus_connection

    bus = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus")
    rule = "type='method_call',member='GetRegisteredEvents'"
    with open_dbus_connection(address) as monitor:
        monitoring = bus.with_interface("org.freedesktop.DBus.Monitoring")
        monitor.send(new_method_call(monitoring, "BecomeMonitor", "asu", ([rule], 0)))
        app: subprocess.Popen[bytes] = start()
        deadline = time.monotonic() + 60
        while True:
            message = monitor.receive(timeout=max(0.0, deadline - time.monotonic()))
            fields = message.header.fields
            if (
                message.header.message_type == MessageType.method_call
                and fields.get(HeaderFields.member) == "GetRegisteredEvents"
            ):
                return app


def test_a_qt_app_that_started_while_the_watch_registered_tells_its_changes(
    tmp_path: Path,
) -> None:
    script = tmp_path / "form.py"
    script.write_text(_FORM)
    with VirtualDesktop((800, 600), []) as desktop:
        address = desktop.accessibility_bus
        assert address is not None
        source = _source(desktop)
        app: subprocess.Popen[bytes] | None = None
        try:
            with _held(_registry(address)):

                def start() -> subprocess.Popen[bytes]:
                    return subprocess.Popen(
                        [_PYTHON, str(script)],
                        env=desktop.app_env(),
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                        start_new_session=True,
                    )

                app = _asks_registry(address, start)
                os.kill(app.pid, signal.SIGSTOP)
            # the registry answers the app (no listeners yet), then the watch registers
            # and is announced to every app subscribed: not yet this one, held
            source.mark()
            assert source._watch is not None and source._watch.watching
            os.kill(app.pid, signal.SIGCONT)
            seen = wait_for(source, lambda s: len(_tabs(s)) == 2)
            assert "selected" in _tabs(seen)["General"], _tabs(seen)
            assert not labelled(seen, "field", "Proxy host")
            (advanced,) = labelled(seen, "tab", "Advanced")
            # (a fresh read says when the click landed; the kept source must see it too)
            _click_until(desktop, advanced, lambda s: bool(labelled(s, "field", "Proxy host")))
            kept = wait_for(source, lambda s: bool(labelled(s, "field", "Proxy host")), limit=30)
            assert labelled(kept, "field", "Proxy host"), [c.label for c in kept.components]
            tabs = _tabs(kept)
            assert "selected" in tabs["Advanced"] and "selected" not in tabs["General"], tabs
        finally:
            source.close()
            if app is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(app.pid, signal.SIGCONT)
                    os.killpg(app.pid, signal.SIGTERM)
                app.wait(timeout=30)
