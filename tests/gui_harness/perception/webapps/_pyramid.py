"""A Pyramid app whose forms are Deform's (colander schemas rendered by Deform's own
Chameleon templates, on the Bootstrap, jQuery, pickadate and select2 Deform ships in its
static folder): a volunteer sign-up with a repeatable phone list, an event registration
with date and time pickers and a searchable select, and a list of events."""

from __future__ import annotations

from html import escape

import colander
import deform
from pyramid.config import Configurator
from pyramid.request import Request
from pyramid.response import Response

_BASE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>{title}</title>
<link rel="stylesheet" href="/deform/css/bootstrap.min.css">
<link rel="stylesheet" href="/deform/css/form.css">{css}
<script src="/deform/scripts/jquery-2.0.3.min.js"></script>
<script src="/deform/scripts/bootstrap.bundle.min.js"></script>
<script src="/deform/scripts/deform.js"></script>{js}</head><body>
<nav class="navbar navbar-expand-md navbar-light bg-light border-bottom mb-4">
<div class="container"><a class="navbar-brand" href="/">Riverside Volunteers</a>
<ul class="navbar-nav me-auto"><li class="nav-item"><a class="nav-link" href="/">Sign up</a></li>
<li class="nav-item"><a class="nav-link" href="/register">Register for an event</a></li>
<li class="nav-item"><a class="nav-link" href="/events">Events</a></li></ul>
<form class="d-flex" role="search"><input class="form-control me-2" type="search"
placeholder="Search events" aria-label="Search events">
<button class="btn btn-outline-success" type="submit">Search</button></form></div></nav>
<div class="container"><div class="row"><div class="col-lg-8">{body}</div></div></div>
<script>deform.load()</script></body></html>"""

SKILLS = (("first-aid", "First aid"), ("driving", "Driving"), ("cooking", "Cooking"),
          ("tutoring", "Tutoring"))  # fmt: skip
AREAS = (("", "- Choose -"), ("north", "North bank"), ("south", "South bank"),
         ("centre", "Town centre"))  # fmt: skip
EVENTS = (("clean", "River clean-up"), ("market", "Saturday market"),
          ("run", "Charity run"), ("library", "Library reading hour"))  # fmt: skip


class _Phone(colander.MappingSchema):
    kind = colander.SchemaNode(
        colander.String(),
        title="Kind",
        widget=deform.widget.SelectWidget(values=(("mobile", "Mobile"), ("home", "Home"))),
    )
    number = colander.SchemaNode(colander.String(), title="Number")


class _Phones(colander.SequenceSchema):
    phone = _Phone(title="Phone")


class SignUp(colander.MappingSchema):
    name = colander.SchemaNode(colander.String(), title="Full name")
    email = colander.SchemaNode(
        colander.String(),
        title="Email",
        validator=colander.Email(),
        widget=deform.widget.TextInputWidget(attributes={"type": "email"}),
    )
    password = colander.SchemaNode(
        colander.String(), title="Password", widget=deform.widget.CheckedPasswordWidget()
    )
    area = colander.SchemaNode(
        colander.String(), title="Area", widget=deform.widget.SelectWidget(values=AREAS)
    )
    skills = colander.SchemaNode(
        colander.Set(), title="Skills", widget=deform.widget.CheckboxChoiceWidget(values=SKILLS)
    )
    phones = _Phones(title="Phone numbers", widget=deform.widget.SequenceWidget(min_len=1))
    notes = colander.SchemaNode(
        colander.String(),
        title="Anything we should know?",
        missing="",
        widget=deform.widget.TextAreaWidget(rows=3),
    )
    terms = colander.SchemaNode(
        colander.Boolean(), title="I agree to the volunteer code of conduct"
    )


class Registration(colander.MappingSchema):
    event = colander.SchemaNode(
        colander.String(), title="Event", widget=deform.widget.Select2Widget(values=EVENTS)
    )
    day = colander.SchemaNode(colander.Date(), title="Day", widget=deform.widget.DateInputWidget())
    start = colander.SchemaNode(
        colander.Time(), title="Arrival time", widget=deform.widget.TimeInputWidget()
    )
    shift = colander.SchemaNode(
        colander.String(),
        title="Shift",
        widget=deform.widget.RadioChoiceWidget(
            values=(("morning", "Morning"), ("afternoon", "Afternoon"), ("evening", "Evening")),
            inline=True,
        ),
    )
    guests = colander.SchemaNode(colander.Integer(), title="Guests you bring", missing=0)
    reminder = colander.SchemaNode(colander.Boolean(), title="Text me a reminder", missing=False)


def _page(request: Request, title: str, body: str, form: deform.Form | None = None) -> Response:
    css = js = ""
    if form is not None:
        needed = form.get_widget_resources()
        css = "".join(
            f'<link rel="stylesheet" href="/deform/{path.removeprefix("deform:static/")}">'
            for path in needed["css"]
        )
        js = "".join(
            f'<script src="/deform/{path.removeprefix("deform:static/")}"></script>'
            for path in needed["js"]
        )
    return Response(_BASE.format(title=escape(title), css=css, js=js, body=body))


def _sign_up(request: Request) -> Response:
    buttons = (
        deform.Button("submit", "Sign up"),
        deform.Button("cancel", "Cancel", css_class="btn-light"),
    )
    form = deform.Form(SignUp(), buttons=buttons)
    return _page(request, "Sign up", "<h2>Volunteer sign-up</h2>" + form.render(), form)


def _register(request: Request) -> Response:
    form = deform.Form(Registration(), buttons=("Register",))
    return _page(request, "Register", "<h2>Register for an event</h2>" + form.render(), form)


def _events(request: Request) -> Response:
    rows = "".join(
        f"<tr><td>{escape(name)}</td><td>2026-12-{12 + i:02}</td><td>{8 + 3 * i} / 20</td>"
        f'<td><a class="btn btn-sm btn-primary" href="/register?event={key}">Register</a> '
        f'<a class="btn btn-sm btn-outline-secondary" href="/events#{key}">Details</a></td></tr>'
        for i, (key, name) in enumerate(EVENTS)
    )
    body = (
        '<h2>Events</h2><div class="btn-group mb-3" role="group">'
        '<a class="btn btn-outline-primary active" href="/events">Upcoming</a>'
        '<a class="btn btn-outline-primary" href="/events?past=1">Past</a></div>'
        '<table class="table table-striped"><thead><tr><th>Event</th><th>Date</th>'
        f"<th>Places taken</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
        '<nav><ul class="pagination"><li class="page-item disabled"><span class="page-link">'
        'Previous</span></li><li class="page-item active"><a class="page-link" href="/events">1'
        '</a></li><li class="page-item"><a class="page-link" href="/events?page=2">2</a></li>'
        '<li class="page-item"><a class="page-link" href="/events?page=2">Next</a></li></ul></nav>'
    )
    return _page(request, "Events", body)


def app() -> object:
    """The WSGI app (its pages: /, /register, /events)."""
    with Configurator() as config:
        config.add_static_view("deform", "deform:static")
        for name, path, view in (
            ("sign_up", "/", _sign_up),
            ("register", "/register", _register),
            ("events", "/events", _events),
        ):
            config.add_route(name, path)
            config.add_view(view, route_name=name)
        return config.make_wsgi_app()
