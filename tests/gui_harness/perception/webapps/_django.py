"""Django's admin over a small catalogue (library/), on SQLite in a temporary folder:
configured once per process (Django's settings are global), served as a WSGI app with
its static files."""

from __future__ import annotations

import datetime
import tempfile
from pathlib import Path

from django.urls import path

urlpatterns: list[object] = []
_APP = None
USER, PASSWORD = "admin", "correct horse battery"


def app(themes: tuple[str, ...] = (), **more: object):  # type: ignore[no-untyped-def]
    """The WSGI app: the admin at /admin/, a superuser USER and a few books; `themes` are
    admin themes' apps put before Django's admin (an admin kit's child process, _jazzmin.py,
    _unfold.py), `more` further settings."""
    global _APP
    if _APP is not None:
        return _APP
    import django
    from django.conf import settings

    folder = Path(tempfile.mkdtemp(prefix="webapp-django-"))
    settings.configure(
        DEBUG=True,
        SECRET_KEY="a key for a page on 127.0.0.1 only",
        ALLOWED_HOSTS=["127.0.0.1", "localhost"],
        ROOT_URLCONF=__name__,
        INSTALLED_APPS=[
            *themes,
            "django.contrib.admin",
            "django.contrib.auth",
            "django.contrib.contenttypes",
            "django.contrib.sessions",
            "django.contrib.messages",
            "django.contrib.staticfiles",
            "tests.gui_harness.perception.webapps.library",
        ],
        MIDDLEWARE=[
            "django.contrib.sessions.middleware.SessionMiddleware",
            "django.middleware.common.CommonMiddleware",
            "django.middleware.csrf.CsrfViewMiddleware",
            "django.contrib.auth.middleware.AuthenticationMiddleware",
            "django.contrib.messages.middleware.MessageMiddleware",
        ],
        TEMPLATES=[
            {
                "BACKEND": "django.template.backends.django.DjangoTemplates",
                "APP_DIRS": True,
                "OPTIONS": {
                    "context_processors": [
                        "django.template.context_processors.request",
                        "django.contrib.auth.context_processors.auth",
                        "django.contrib.messages.context_processors.messages",
                    ]
                },
            }
        ],
        DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": str(folder / "db")}},
        STATIC_URL="/static/",
        USE_TZ=True,
        DEFAULT_AUTO_FIELD="django.db.models.AutoField",
        **more,
    )
    django.setup()
    from django.contrib import admin
    from django.contrib.auth.models import User
    from django.contrib.staticfiles.handlers import StaticFilesHandler
    from django.core.management import call_command
    from django.core.wsgi import get_wsgi_application

    from tests.gui_harness.perception.webapps.library.models import Author, Book

    urlpatterns[:] = [path("admin/", admin.site.urls)]
    call_command("migrate", run_syncdb=True, verbosity=0)
    User.objects.create_superuser(USER, "admin@example.org", PASSWORD)
    authors = [
        Author.objects.create(name=name, email=f"{name.split()[0].lower()}@example.org")
        for name in ("Ursula Le Guin", "Mary Beard", "Carl Sagan")
    ]
    for i, (title, genre) in enumerate(
        [
            ("The Dispossessed", "fiction"),
            ("SPQR", "history"),
            ("Cosmos", "science"),
            ("The Left Hand of Darkness", "fiction"),
            ("Pale Blue Dot", "science"),
            ("Women & Power", "history"),
        ]
    ):
        Book.objects.create(
            title=title,
            author=authors[i % 3],
            genre=genre,
            published=datetime.date(1970 + 7 * i, 1 + i, 10 + i),
            in_print=i % 2 == 0,
            pages=200 + 40 * i,
        )
    _APP = StaticFilesHandler(get_wsgi_application())
    return _APP


def serve(port: int, themes: tuple[str, ...], then=None, **more: object) -> None:  # type: ignore[no-untyped-def]
    """app(themes, **more) served on 127.0.0.1:`port` until the process ends (an admin
    kit's child process: Django's settings are its process's); `then()` is called once
    the app is made, before it serves."""
    from werkzeug.serving import make_server

    wsgi = app(themes, **more)
    if then is not None:
        then()
    make_server("127.0.0.1", port, wsgi, threaded=True).serve_forever()
