"""Django's admin themed by django-unfold (Tailwind CSS, its own static files and icon
font): the catalogue of _django.py with its model admins made Unfold's (Unfold styles
only its own ModelAdmin and inlines). Run as a child process
(`python -m tests.gui_harness.perception.webapps._unfold PORT`): Django's settings are
one per process."""

from __future__ import annotations

import sys


def _unfold_admins() -> None:
    """The catalogue's admins again as Unfold's, with the same options."""
    from django.contrib import admin
    from unfold.admin import ModelAdmin, TabularInline

    from tests.gui_harness.perception.webapps.library import admin as plain
    from tests.gui_harness.perception.webapps.library.models import Author, Book

    class BookInline(TabularInline, plain.BookInline):  # type: ignore[misc]
        pass

    class AuthorAdmin(ModelAdmin, plain.AuthorAdmin):  # type: ignore[misc]
        inlines = (BookInline,)

    class BookAdmin(ModelAdmin, plain.BookAdmin):  # type: ignore[misc]
        pass

    for model, model_admin in ((Author, AuthorAdmin), (Book, BookAdmin)):
        admin.site.unregister(model)
        admin.site.register(model, model_admin)


if __name__ == "__main__":
    from tests.gui_harness.perception.webapps._django import serve

    serve(
        int(sys.argv[1]),
        ("unfold",),
        then=_unfold_admins,
        UNFOLD={"SITE_TITLE": "Library", "SITE_HEADER": "Library"},
    )
