"""A Flask app with Flask-WTF forms rendered by Bootstrap-Flask (Bootstrap 5, served from
the package, not a CDN): a navbar, a sign-up form, a horizontal log-in form, an inline
search over a table with row actions, and a settings form."""

from __future__ import annotations

from flask import Flask, flash, render_template_string
from flask_bootstrap import Bootstrap5
from flask_wtf import CSRFProtect, FlaskForm
from wtforms import (
    BooleanField,
    DateField,
    EmailField,
    FileField,
    IntegerField,
    PasswordField,
    RadioField,
    SearchField,
    SelectField,
    SelectMultipleField,
    StringField,
    SubmitField,
    TextAreaField,
)

_BASE = """<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
{{ bootstrap.load_css() }}<title>Inventory</title></head><body>
{% from 'bootstrap5/nav.html' import render_nav_item %}
{% from 'bootstrap5/utils.html' import render_messages %}
<nav class="navbar navbar-expand-lg navbar-dark bg-dark mb-3"><div class="container">
<a class="navbar-brand" href="/">Inventory</a>
<ul class="navbar-nav me-auto">{{ render_nav_item('items', 'Items') }}
{{ render_nav_item('signup', 'Sign up') }}{{ render_nav_item('settings', 'Settings') }}</ul>
<a class="btn btn-outline-light btn-sm" href="/login">Log in</a></div></nav>
<div class="container">{{ render_messages(dismissible=True) }}{% block body %}{% endblock %}
</div>{{ bootstrap.load_js() }}</body></html>"""


class SignUp(FlaskForm):
    name = StringField("Full name")
    email = EmailField("Email address")
    password = PasswordField("Password")
    plan = RadioField("Plan", choices=[("free", "Free"), ("team", "Team"), ("pro", "Pro")])
    country = SelectField("Country", choices=["France", "Japan", "Kenya", "Peru"])
    newsletter = BooleanField("Send me the newsletter")
    submit = SubmitField("Create account")


class LogIn(FlaskForm):
    email = EmailField("Email")
    password = PasswordField("Password")
    remember = BooleanField("Remember me")
    submit = SubmitField("Log in")


class Search(FlaskForm):
    query = SearchField("Search", render_kw={"placeholder": "Search items"})
    kind = SelectField("Kind", choices=["All", "Tools", "Parts"])
    go = SubmitField("Filter")


class Settings(FlaskForm):
    display = StringField("Display name")
    about = TextAreaField("About you")
    start = DateField("Start date")
    seats = IntegerField("Seats")
    languages = SelectMultipleField("Languages", choices=["English", "French", "German"])
    avatar = FileField("Avatar")
    public = BooleanField("Public profile")
    save = SubmitField("Save changes")


class _Item:
    def __init__(self, id: int, name: str, kind: str, stock: int) -> None:
        self.id, self.name, self.kind, self.stock = id, name, kind, stock


ITEMS = [
    _Item(1, "Hammer", "Tools", 12),
    _Item(2, "Bolt M6", "Parts", 340),
    _Item(3, "Screwdriver", "Tools", 25),
    _Item(4, "Washer", "Parts", 800),
    _Item(5, "Wrench", "Tools", 7),
]


def app() -> Flask:
    """The Flask app (its pages: / = /items, /signup, /login, /settings)."""
    flask = Flask("webapp_flask")
    flask.config.update(SECRET_KEY="a key for a page on 127.0.0.1 only", BOOTSTRAP_SERVE_LOCAL=True)
    Bootstrap5(flask)
    CSRFProtect(flask)

    def page(body: str, **values: object) -> str:
        return render_template_string(
            _BASE.replace("{% block body %}{% endblock %}", body), **values
        )

    @flask.route("/")
    @flask.route("/items")
    def items() -> str:
        flash("5 items are low on stock.", "warning")
        return page(
            """{% from 'bootstrap5/form.html' import render_form %}
{% from 'bootstrap5/table.html' import render_table %}
<h1 class="h3">Items</h1>{{ render_form(form, form_type='inline') }}
{{ render_table(items, titles=[('id', '#'), ('name', 'Name'), ('kind', 'Kind'),
  ('stock', 'Stock')], show_actions=True, view_url='/items/:id',
  edit_url='/items/:id', delete_url='/items/:id', new_url='/items') }}
<nav><ul class="pagination">
<li class="page-item disabled"><span class="page-link">Previous</span></li>
<li class="page-item active"><a class="page-link" href="/items">1</a></li>
<li class="page-item"><a class="page-link" href="/items">2</a></li>
<li class="page-item"><a class="page-link" href="/items">Next</a></li></ul></nav>""",
            form=Search(),
            items=ITEMS,
        )

    @flask.route("/signup")
    def signup() -> str:
        return page(
            """{% from 'bootstrap5/form.html' import render_form %}
<div class="row"><div class="col-md-6"><h1 class="h3">Create your account</h1>
{{ render_form(form) }}</div></div>""",
            form=SignUp(),
        )

    @flask.route("/login")
    def login() -> str:
        return page(
            """{% from 'bootstrap5/form.html' import render_form %}
<div class="row"><div class="col-md-7"><h1 class="h3">Log in</h1>
{{ render_form(form, form_type='horizontal') }}
<p><a href="/signup">Forgot your password?</a> · <a href="/signup">Create an account</a></p>
</div></div>""",
            form=LogIn(),
        )

    @flask.route("/settings")
    def settings() -> str:
        return page(
            """{% from 'bootstrap5/form.html' import render_form %}
<h1 class="h3">Settings</h1><div class="row"><div class="col-md-8">
{{ render_form(form, button_map={'save': 'primary'}) }}</div>
<div class="col-md-4"><div class="list-group">
<a class="list-group-item list-group-item-action active" href="/settings">Profile</a>
<a class="list-group-item list-group-item-action" href="/settings">Security</a>
<a class="list-group-item list-group-item-action" href="/settings">Billing</a></div>
<button type="button" class="btn btn-outline-danger mt-3">Delete account</button></div></div>""",
            form=Settings(),
        )

    return flask
