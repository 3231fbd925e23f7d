"""A GTK 4 app for the kept-tree tests: an expander holding a field and a button (GTK 4
adds an expander's child to its tree when it opens, with no ChildrenChanged event), a
notebook of three tabs (GTK 4.8 names every tab "Tab"; its label holds the text) and a
centred toggle button whose label grows when it is pressed (it moves as it changes
state).

Run as `/usr/bin/python3 gtk4_panel.py` (GTK 4 with PyGObject).
"""

from __future__ import annotations

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import Gio, Gtk  # noqa: E402


def activate(app: Gtk.Application) -> None:
    window = Gtk.ApplicationWindow(application=app, title="Panel")
    window.set_default_size(900, 600)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=12)
    for side in ("top", "bottom", "start", "end"):
        getattr(box, f"set_margin_{side}")(16)
    expander = Gtk.Expander(label="Advanced options")
    inner = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=8)
    token = Gtk.Entry(placeholder_text="Access token")
    token.update_property([Gtk.AccessibleProperty.LABEL], ["Access token"])
    inner.append(token)
    inner.append(Gtk.Button(label="Save token"))
    expander.set_child(inner)
    box.append(expander)
    pin = Gtk.ToggleButton(label="Pin")
    pin.set_halign(Gtk.Align.CENTER)
    pin.connect("toggled", lambda b: b.set_label("Pinned here" if b.get_active() else "Pin"))
    box.append(pin)
    notebook = Gtk.Notebook()
    for name in ("Summary", "Details", "History"):
        notebook.append_page(Gtk.Label(label=f"{name} page"), Gtk.Label(label=name))
    notebook.set_vexpand(True)
    box.append(notebook)
    window.set_child(box)
    window.present()


app = Gtk.Application(application_id="org.example.KeptPanel", flags=Gio.ApplicationFlags.NON_UNIQUE)
app.connect("activate", activate)
app.run([])
