"""A PyWebIO app (its own front end on Bootstrap 4, served from the package, not a
CDN; the page is drawn in the browser from what the script sends over a websocket),
run as a child process on Tornado: a library's loans page with tabs, a table with row
buttons and a button bar (/?app=index); a book request form with a text field, a number,
a drop-down, radios, check boxes, a slider, a text area and its action buttons
(/?app=request)."""

from __future__ import annotations

import sys

from pywebio import config, start_server
from pywebio.input import (
    NUMBER,
    TEXT,
    actions,
    checkbox,
    input,
    input_group,
    radio,
    select,
    slider,
    textarea,
)
from pywebio.output import put_buttons, put_markdown, put_table, put_tabs, put_text

LOANS = [
    ("The Left Hand of Darkness", "Ada", "2026-12-11"),
    ("Middlemarch", "Grace", "2026-12-14"),
    ("Invisible Cities", "Linus", "2026-12-20"),
    ("Beloved", "Edsger", "2026-12-22"),
]


@config(title="Loans")
def index() -> None:
    put_markdown("## Loans")
    put_buttons(["New loan", "Renew all", "Print list"], onclick=lambda _: None)
    rows = [
        [title, who, due, put_buttons(["Return", "Renew"], onclick=lambda _: None, small=True)]
        for title, who, due in LOANS
    ]
    put_tabs(
        [
            {"title": "On loan", "content": put_table(rows, header=["Title", "Reader", "Due", ""])},
            {"title": "Overdue", "content": put_text("Nothing is overdue.")},
            {"title": "Reservations", "content": put_text("No reservations.")},
        ]
    )
    input("Find a reader", type=TEXT, placeholder="Name or card number")


@config(title="Request a book")
def request() -> None:
    put_markdown("## Request a book")
    input_group(
        "Request",
        [
            input("Title", name="title", type=TEXT, placeholder="Book title"),
            input("Copies", name="copies", type=NUMBER, value=1),
            select("Branch", ["Central", "Riverside", "Hilltop"], name="branch"),
            radio("Format", ["Hardback", "Paperback", "E-book"], name="format", inline=True),
            checkbox("Notify me", ["By email", "By text message"], name="notify", inline=True),
            slider("Priority", name="priority", value=3, min_value=1, max_value=5),
            textarea("Why this book?", name="why", rows=3),
            actions(
                "",
                [
                    {"label": "Send request", "value": "send"},
                    {"label": "Save draft", "value": "draft", "color": "secondary"},
                    {"label": "Start over", "type": "reset", "color": "warning"},
                ],
                name="action",
            ),
        ],
    )


if __name__ == "__main__":
    start_server(
        {"index": index, "request": request},
        port=int(sys.argv[1]) if len(sys.argv) > 1 else 8080,
        host="127.0.0.1",
        cdn=False,
        auto_open_webbrowser=False,
    )
