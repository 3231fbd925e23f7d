"""Django's admin themed by django-jazzmin (AdminLTE 3 on Bootstrap 4, its own static
files): the catalogue of _django.py with Jazzmin's defaults (a dark sidebar, a light top
bar), Google's font CDN off (no network here). Run as a child process
(`python -m tests.gui_harness.perception.webapps._jazzmin PORT`): Django's settings are
one per process."""

from __future__ import annotations

import sys

from tests.gui_harness.perception.webapps._django import serve

if __name__ == "__main__":
    serve(
        int(sys.argv[1]),
        ("jazzmin",),
        JAZZMIN_SETTINGS={
            "site_title": "Library",
            "site_header": "Library",
            "site_brand": "Library",
            "welcome_sign": "Welcome to the library",
            "search_model": ["library.Book"],
            "topmenu_links": [{"name": "Home", "url": "admin:index"}, {"model": "library.Author"}],
            "use_google_fonts_cdn": False,
        },
    )
