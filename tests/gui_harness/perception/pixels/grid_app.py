"""A Tk app for the grid and toolbar tests: a menu bar, a toolbar of flat icon buttons, a
ruled table of 24 rows by 6 columns with a header row, and OK / Cancel buttons.

Run as `python grid_app.py STATE.json`. It writes STATE.json once drawn (the toolbar
buttons' screen boxes and the table's origin) and again on every click: the toolbar
button or the table cell (body row and column, from 0) that was clicked last.
"""

from __future__ import annotations

import json
import sys
import tkinter as tk

COLUMNS = (90, 140, 70, 110, 80, 100)  # px, the table's column widths
ROW_H = 22
ROWS = 24  # body rows, below one header row
ICONS = ("error", "gray50", "hourglass", "info", "questhead", "question", "warning")

state_file = sys.argv[1]
state: dict[str, object] = {"clicks": 0}


def save() -> None:
    with open(state_file + ".part", "w") as out:
        json.dump(state, out)
    import os

    os.replace(state_file + ".part", state_file)


def clicked(what: object) -> None:
    state["last"] = what
    state["clicks"] = int(state["clicks"]) + 1  # type: ignore[call-overload]
    save()


root = tk.Tk()
root.geometry("900x760+0+0")
menu = tk.Menu(root)
for name in ("File", "Edit", "View", "Help"):
    menu.add_cascade(label=name, menu=tk.Menu(menu, tearoff=0))
root.config(menu=menu)

bar = tk.Frame(root, relief="groove", borderwidth=2)
bar.pack(side="top", anchor="w", padx=6, pady=4)
buttons = {}
for icon in ICONS:
    button = tk.Button(
        bar, bitmap=icon, relief="flat", borderwidth=0, width=26, height=24,
        foreground="#202060", command=lambda icon=icon: clicked(icon),
    )  # fmt: skip
    button.pack(side="left", padx=2, pady=2)
    buttons[icon] = button

width = sum(COLUMNS) + 1
canvas = tk.Canvas(
    root, width=width, height=(ROWS + 1) * ROW_H + 1, background="white",
    highlightthickness=0, borderwidth=0,
)  # fmt: skip
canvas.pack(side="top", anchor="w", padx=20, pady=8)
edges = [sum(COLUMNS[:i]) for i in range(len(COLUMNS) + 1)]
canvas.create_rectangle(0, 0, width, ROW_H, fill="#d8d8d8", outline="")
for i, title in enumerate(("Item", "Description", "Qty", "Supplier", "Price", "Total")):
    canvas.create_text(edges[i] + 6, ROW_H // 2, text=title, anchor="w")
for r in range(ROWS):
    y = (r + 1) * ROW_H + ROW_H // 2
    for i, text in enumerate((f"P-{100 + r}", f"part {r}", str(r % 7 + 1), "Acme", "9.50", "")):
        canvas.create_text(edges[i] + 6, y, text=text, anchor="w")
for x in edges:
    canvas.create_line(x, 0, x, (ROWS + 1) * ROW_H + 1, fill="#a0a0a0")
for r in range(ROWS + 2):
    canvas.create_line(0, r * ROW_H, width, r * ROW_H, fill="#a0a0a0")


def on_table(event: tk.Event) -> None:  # type: ignore[type-arg]
    row = event.y // ROW_H - 1
    column = max(i for i, x in enumerate(edges[:-1]) if x <= event.x)
    clicked(["cell", row, column])


canvas.bind("<Button-1>", on_table)
buttons_row = tk.Frame(root)
buttons_row.pack(side="top", anchor="e", padx=20)
tk.Button(buttons_row, text="Cancel", command=lambda: clicked("Cancel")).pack(side="right")
tk.Button(buttons_row, text="OK", command=lambda: clicked("OK")).pack(side="right", padx=8)


def drawn() -> None:
    root.update_idletasks()
    state["toolbar"] = {
        icon: [b.winfo_rootx(), b.winfo_rooty(), b.winfo_width(), b.winfo_height()]
        for icon, b in buttons.items()
    }
    state["table"] = [canvas.winfo_rootx(), canvas.winfo_rooty(), ROW_H, edges]
    save()


root.after_idle(lambda: root.after(50, drawn))
root.mainloop()
