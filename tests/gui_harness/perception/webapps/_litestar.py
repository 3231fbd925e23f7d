"""A Litestar app with Jinja2 templates (templates/litestar/) on Tabler (the Bootstrap-based
admin kit; its stylesheet as starlette-admin's wheel ships it, PyPI having no Tabler of
its own): a helpdesk's dashboard with stat cards and a tickets table, a new-ticket form
and a settings page with tabs and switches."""

from __future__ import annotations

from pathlib import Path

import starlette_admin
from litestar import Litestar, Request, get
from litestar.contrib.jinja import JinjaTemplateEngine
from litestar.response import Template
from litestar.static_files import create_static_files_router
from litestar.template.config import TemplateConfig

HERE = Path(__file__).parent
TABLER = Path(starlette_admin.__file__).parent / "static"
STATS = [
    ("Open tickets", 38, "/tickets?status=open"),
    ("Waiting on requester", 11, "/tickets?status=pending"),
    ("Solved this week", 64, "/tickets?status=solved"),
    ("Breaching SLA", 3, "/tickets?sla=breach"),
]
TICKETS = [
    (4121, "Printer on floor 3 prints blank pages", "Ada Moreno", "Open"),
    (4120, "VPN drops every ten minutes", "Jonas Berg", "Pending"),
    (4118, "New starter needs a laptop", "Priya Nair", "Open"),
    (4117, "Cannot open shared calendar", "Tom Okafor", "Solved"),
    (4115, "Request: second monitor", "Lena Fischer", "Pending"),
]
QUEUES = ["IT support", "Facilities", "Human resources", "Finance"]


@get("/")
async def dashboard(request: Request) -> Template:
    context = {"title": "Dashboard", "active": "/", "stats": STATS, "tickets": TICKETS}
    return Template("litestar/dashboard.html", context=context)


@get("/tickets/new")
async def new_ticket(request: Request) -> Template:
    context = {"title": "New ticket", "active": "/tickets/new", "queues": QUEUES}
    return Template("litestar/new_ticket.html", context=context)


@get("/settings")
async def settings(request: Request) -> Template:
    return Template("litestar/settings.html", context={"title": "Settings", "active": "/settings"})


def app() -> Litestar:
    """The ASGI app (its pages: /, /tickets/new, /settings)."""
    return Litestar(
        route_handlers=[
            dashboard,
            new_ticket,
            settings,
            create_static_files_router(path="/tabler", directories=[TABLER]),
        ],
        template_config=TemplateConfig(directory=HERE / "templates", engine=JinjaTemplateEngine),
        openapi_config=None,
        logging_config=None,
    )
