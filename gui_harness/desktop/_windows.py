"""Top-level windows as a user sees them, with or without a window manager.

Owns `Window` and `list_windows` (the viewable application windows of a screen, bottom
to top, with their titles, owners' pids, boxes and frames; under a reparenting window
manager each sits inside a frame, found by its WM_STATE: `client_windows`) and
`window_request` / `ewmh_request` (ask the window manager to raise or maximise one, as a
pager does). X11Desktop serialises calls on its connection.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Window", "client_windows", "ewmh_request", "list_windows", "window_request"]

_MAX_DEPTH = 3  # root → frame → (a decoration layer) → client


@dataclass(frozen=True)
class Window:
    """A viewable top-level window: its X id, owning process (None if unknown) and geometry.

    `frame` is (x, y, width, height) of what the window manager draws around it (title
    bar and borders included; the window's own box without one)."""

    id: int
    pid: int | None
    title: str
    x: int
    y: int
    width: int
    height: int
    frame: tuple[int, int, int, int] | None = None


def list_windows(connection: Any, root: Any) -> list[Window]:
    """The viewable top-level windows of `root`'s screen, bottom to top, with their
    owners' pids.

    Under a window manager each is the application's window inside its frame, with the
    position of its content on the screen (below the title bar), and the title the
    manager shows (_NET_WM_NAME in UTF-8, else WM_NAME). The pid comes from the
    X-Resource extension, so it works for clients (Tk among them) that do not set
    _NET_WM_PID."""
    import Xlib.error

    utf8_name, utf8 = connection.intern_atom("_NET_WM_NAME"), connection.intern_atom("UTF8_STRING")
    windows = []
    for client, frame in client_windows(connection, root):
        try:
            geometry = client.get_geometry()
            origin = client.translate_coords(root, 0, 0)
            named = client.get_full_property(utf8_name, utf8)
            title = named.value if named is not None else client.get_wm_name() or ""
            outer = frame.get_geometry()
        except Xlib.error.XError:  # destroyed while we looked: not a window any more
            continue
        border = 2 * outer.border_width
        windows.append(
            Window(
                id=client.id,
                pid=_window_pid(connection, client.id),
                title=title if isinstance(title, str) else title.decode(errors="replace"),
                x=-origin.x,
                y=-origin.y,
                width=geometry.width,
                height=geometry.height,
                frame=(outer.x, outer.y, outer.width + border, outer.height + border),
            )
        )
    return windows


def _window_pid(connection: Any, window_id: int) -> int | None:
    import Xlib.error
    from Xlib.ext import res

    try:
        reply = connection.res_query_client_ids(
            [{"client": window_id, "mask": res.LocalClientPIDMask}]
        )
    except (Xlib.error.XError, AttributeError):
        return None
    for client in reply.ids:
        if client.value:
            return int(client.value[0])
    return None


def client_windows(connection: Any, root: Any) -> Iterator[tuple[Any, Any]]:
    """(client window, its root child) for each viewable top-level, bottom to top.

    Under a window manager each root child is a frame holding a client, the viewable
    descendant with WM_STATE. A root child without one is the client itself: there is no
    window manager (none sets WM_STATE), or it is an override-redirect popup (menus and
    tooltips are what the user sees); a window manager's own off-screen window is left out.
    """
    import Xlib.error
    from Xlib import X

    wm_state = connection.intern_atom("WM_STATE")
    for child in root.query_tree().children:
        try:
            attributes = child.get_attributes()
            if attributes.map_state != X.IsViewable:
                continue
            client = _client(child, wm_state, _MAX_DEPTH)
            if client is None and _on_screen(child, root):
                client = child
        except Xlib.error.XError:  # destroyed while we looked: not a window any more
            continue
        if client is not None:
            yield client, child


def _on_screen(window: Any, root: Any) -> bool:
    """Whether `window` shows at least a few pixels of the root (a window manager keeps
    its own check window mapped off-screen)."""
    box, screen = window.get_geometry(), root.get_geometry()
    width: int = min(box.x + box.width, screen.width) - max(box.x, 0)
    height: int = min(box.y + box.height, screen.height) - max(box.y, 0)
    return width > 1 and height > 1


def _client(window: Any, wm_state: int, depth: int) -> Any | None:
    from Xlib import X

    if window.get_property(wm_state, wm_state, 0, 0) is not None:
        return window
    if depth <= 1:
        return None
    for child in window.query_tree().children:
        if child.get_attributes().map_state != X.IsViewable:
            continue
        found = _client(child, wm_state, depth - 1)
        if found is not None:
            return found
    return None


def ewmh_request(connection: Any, root: Any, window: int, message: str, data: list[int]) -> None:
    """Send the window manager a client message about `window` (EWMH: `message` is
    _NET_ACTIVE_WINDOW or _NET_WM_STATE, `data` its up to five numbers)."""
    from Xlib import X
    from Xlib.protocol import event

    target = connection.create_resource_object("window", window)
    request = event.ClientMessage(
        window=target,
        client_type=connection.intern_atom(message),
        data=(32, [*data, 0, 0, 0, 0, 0][:5]),
    )
    root.send_event(request, event_mask=X.SubstructureRedirectMask | X.SubstructureNotifyMask)
    connection.flush()


def window_request(connection: Any, root: Any, window: int, what: str, *, display: str) -> None:
    """Raise ("raise") or maximise ("maximize") top-level `window`: through the window
    manager (EWMH) when one runs; without one, "raise" stacks it on top and gives it the
    input focus, and "maximize" raises DesktopError."""
    from Xlib import X

    from gui_harness.errors import DesktopError

    managed = root.get_full_property(connection.intern_atom("_NET_SUPPORTING_WM_CHECK"), 0)
    if what == "raise" and managed is not None:
        ewmh_request(connection, root, window, "_NET_ACTIVE_WINDOW", [1, X.CurrentTime, 0])
    elif what == "raise":
        target = connection.create_resource_object("window", window)
        target.configure(stack_mode=X.Above)
        target.set_input_focus(X.RevertToParent, X.CurrentTime)
        connection.sync()
    elif managed is not None:
        add, vertical, horizontal = (
            1,  # _NET_WM_STATE_ADD
            connection.intern_atom("_NET_WM_STATE_MAXIMIZED_VERT"),
            connection.intern_atom("_NET_WM_STATE_MAXIMIZED_HORZ"),
        )
        ewmh_request(connection, root, window, "_NET_WM_STATE", [add, vertical, horizontal, 1])
    else:
        raise DesktopError(f"maximising a window needs a window manager on {display}")
