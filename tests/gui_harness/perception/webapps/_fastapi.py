"""A FastAPI app with Jinja2 templates (templates/fastapi/) and a stylesheet of its own
(static/app.css): a todo list, a search with a results table, a settings form."""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates

HERE = Path(__file__).parent
TODOS = [
    {"text": "Write the quarterly report", "done": False},
    {"text": "Book the meeting room", "done": True},
    {"text": "Review pull requests", "done": False},
    {"text": "Order new chairs", "done": False},
]
RESULTS = [
    ("Quarterly report draft", "Ada", "2026-12-04"),
    ("Report to the board", "Grace", "2026-12-09"),
    ("Expense report", "Linus", "2026-12-12"),
    ("Weekly report", "Ada", "2026-12-15"),
]


def app() -> FastAPI:
    """The ASGI app (its pages: /, /search?q=..., /settings)."""
    api = FastAPI()
    templates = Jinja2Templates(directory=HERE / "templates")
    api.mount("/static", StaticFiles(directory=HERE / "static"), name="static")

    @api.get("/", response_class=HTMLResponse)
    def todos(request: Request) -> HTMLResponse:
        return templates.TemplateResponse(
            request, "fastapi/todos.html", {"title": "Todos", "todos": TODOS}
        )

    @api.get("/search", response_class=HTMLResponse)
    def search(request: Request, q: str = "") -> HTMLResponse:
        return templates.TemplateResponse(
            request, "fastapi/search.html", {"title": "Search", "q": q, "results": RESULTS}
        )

    @api.get("/settings", response_class=HTMLResponse)
    def settings(request: Request) -> HTMLResponse:
        return templates.TemplateResponse(request, "fastapi/settings.html", {"title": "Settings"})

    return api
