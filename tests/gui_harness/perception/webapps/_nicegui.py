"""A NiceGUI app (Vue and Quasar components, served from the package): a header with
buttons, tabs, a form of inputs, a selectable table and an expansion. Run as a child
process (`python -m tests.gui_harness.perception.webapps._nicegui PORT`): NiceGUI's
ui.run() owns its process's event loop."""

from __future__ import annotations

import sys

from nicegui import ui


@ui.page("/")
def home() -> None:
    with ui.header().classes("items-center"):
        ui.label("Orders").classes("text-h6")
        ui.space()
        ui.button("New order", icon="add")
        ui.button(icon="settings").props("flat round color=white")
    with ui.tabs():
        ui.tab("Open")
        ui.tab("Shipped")
        ui.tab("Archived")
    with ui.row().classes("items-center"):
        ui.input("Customer", placeholder="Name or email")
        ui.select(["Any", "Card", "Invoice"], value="Any", label="Payment").classes("w-40")
        ui.checkbox("Paid only")
        ui.switch("Express")
        ui.button("Search").props("outline")
    columns = [
        {"name": "id", "label": "Order", "field": "id"},
        {"name": "customer", "label": "Customer", "field": "customer"},
        {"name": "total", "label": "Total", "field": "total"},
    ]
    rows = [
        {"id": 1041, "customer": "Ada Lovelace", "total": "€ 120.00"},
        {"id": 1042, "customer": "Alan Turing", "total": "€ 89.50"},
        {"id": 1043, "customer": "Grace Hopper", "total": "€ 15.00"},
    ]
    ui.table(columns=columns, rows=rows, row_key="id", selection="multiple").classes("w-96")
    with ui.row().classes("items-center"):
        ui.radio(["Daily", "Weekly", "Monthly"], value="Weekly").props("inline")
        ui.slider(min=0, max=10, value=3).classes("w-40")
        ui.link("Export as CSV", "/")
    with ui.expansion("Advanced filters", icon="tune").classes("w-96"):
        ui.number("Minimum total", value=0)


@ui.page("/settings")
def settings() -> None:
    with ui.card().classes("w-96"):
        ui.label("Account").classes("text-h6")
        ui.input("Display name", value="Ada")
        ui.input("Password", password=True, password_toggle_button=True)
        ui.textarea("About you")
        ui.toggle(["Light", "Dark", "Auto"], value="Light")
        with ui.row():
            ui.button("Save", color="primary")
            ui.button("Cancel").props("flat")
    ui.link("Back to orders", "/")


if __name__ in {"__main__", "__mp_main__"}:
    ui.run(
        host="127.0.0.1",
        port=int(sys.argv[1]) if len(sys.argv) > 1 else 8080,
        show=False,
        reload=False,
        title="Orders",
        show_welcome_message=False,
    )
