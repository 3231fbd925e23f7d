"""Two Shiny for Python apps (its Bootstrap 5 and bslib, selectize, ion.rangeSlider and
bootstrap-datepicker, served from the package) mounted on one Starlette router: a
lab-samples page with a sidebar of inputs, tabs and a table with row buttons; a sample intake form
with a numeric field, a date, radios, check boxes and action buttons."""

from __future__ import annotations

from shiny import App, ui
from starlette.applications import Starlette
from starlette.routing import Mount

HEAD = ("Sample", "Site", "pH", "Nitrate mg/l", "Status", "")
SAMPLES = [
    ("S-0141", "River", 7.1, 3.2, "Done"),
    ("S-0142", "Lake", 6.8, 1.1, "Queued"),
    ("S-0143", "Well", 7.4, 0.4, "Done"),
    ("S-0144", "River", 7.0, 2.9, "Running"),
    ("S-0145", "Spring", 6.5, 0.2, "Queued"),
]


def _table() -> ui.Tag:
    rows = [
        ui.tags.tr(
            *(ui.tags.td(str(v)) for v in row),
            ui.tags.td(ui.input_action_button(f"open{n}", "Open", class_="btn-sm")),
        )
        for n, row in enumerate(SAMPLES)
    ]
    return ui.tags.table(
        ui.tags.thead(ui.tags.tr(*(ui.tags.th(h) for h in HEAD))),
        ui.tags.tbody(*rows),
        class_="table table-striped table-sm mt-2",
    )


def _samples() -> App:
    page = ui.page_sidebar(
        ui.sidebar(
            ui.input_select("site", "Site", ["All", "River", "Lake", "Well", "Spring"]),
            ui.input_slider("ph", "pH range", min=4, max=10, value=(6, 8), step=0.1),
            ui.input_checkbox_group("status", "Status", ["Done", "Queued", "Running"]),
            ui.input_switch("flagged", "Flagged only"),
            ui.input_action_button("refresh", "Refresh"),
            title="Filters",
        ),
        ui.navset_tab(
            ui.nav_panel("Table", _table()),
            ui.nav_panel("Chart", ui.p("No chart yet.")),
            ui.nav_panel("Notes", ui.input_text_area("note", "Lab notes", rows=4)),
        ),
        ui.div(
            ui.input_action_button("export", "Export", class_="btn-outline-primary"),
            ui.tags.a("Download report", href="report.csv", class_="btn btn-outline-secondary"),
            class_="d-flex gap-2 mt-3",
        ),
        title="Water samples",
    )

    return App(page, None)


def _intake() -> App:
    page = ui.page_fluid(
        ui.h2("Sample intake", class_="mt-3"),
        ui.layout_columns(
            ui.card(
                ui.card_header("Sample"),
                ui.input_text("code", "Sample code", placeholder="S-0000"),
                ui.input_selectize(
                    "collector", "Collected by", ["Ada", "Grace", "Linus"], multiple=False
                ),
                ui.input_numeric("volume", "Volume (ml)", value=250, min=0, step=50),
                ui.input_date("taken", "Date taken", value="2026-12-01"),
                ui.input_radio_buttons(
                    "container", "Container", ["Glass", "Plastic", "Sterile bag"], inline=True
                ),
            ),
            ui.card(
                ui.card_header("Tests"),
                ui.input_checkbox_group(
                    "tests", "Tests to run", ["pH", "Nitrate", "Coliforms", "Lead"]
                ),
                ui.input_checkbox("cold", "Kept below 4 °C"),
                ui.input_password("pin", "Technician PIN"),
                ui.input_text_area("remarks", "Remarks", placeholder="Anything unusual"),
            ),
            col_widths=(6, 6),
        ),
        ui.div(
            ui.input_action_button("save", "Save sample", class_="btn-primary"),
            ui.input_action_button("clear", "Clear form"),
            ui.input_action_link("help", "How to label a sample"),
            class_="d-flex gap-3 align-items-center mb-3",
        ),
    )
    return App(page, None)


def app() -> Starlette:
    """The ASGI app: the samples page at /, the intake form at /intake/."""
    return Starlette(routes=[Mount("/intake", app=_intake()), Mount("/", app=_samples())])
