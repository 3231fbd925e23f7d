"""The audit's report: per app, per toolkit, held-out against tuned, per invariant, and
the failure classes with an example each, as Markdown from the apps' result dicts
(AppResult.to_dict()). Start at summarise().
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from gui_harness.bench.audit.invariants import INVARIANTS

__all__ = ["rates", "summarise"]


def rates(apps: Iterable[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Invariant → (things checked, violations) over `apps`' screens."""
    out = {name: [0, 0] for name in INVARIANTS}
    for app in apps:
        for screen in app["screens"]:
            for name in INVARIANTS:
                out[name][0] += screen["checked"].get(name, 0)
            for finding in screen["findings"]:
                out[finding["invariant"]][1] += 1
    return {k: (v[0], v[1]) for k, v in out.items()}


def _cell(checked: int, bad: int) -> str:
    if checked == 0:
        return "–" if bad == 0 else f"{bad} bad"
    return f"{max(0.0, 1 - bad / checked):.0%} ({bad}/{checked})"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.0f}"


def summarise(apps: Sequence[dict[str, Any]], machine: str = "") -> str:
    """The whole report as Markdown."""
    lines = [f"Perception audit: {len(apps)} apps; {machine}".rstrip("; "), ""]
    head = "| app | toolkit | part | status | screens | " + " | ".join(INVARIANTS)
    lines += [head + " | first look ms | later ms |", "|" + "---|" * (len(INVARIANTS) + 7)]
    for app in apps:
        r = rates([app])
        part = "held out" if app["held_out"] else "tuned"
        status = app["status"] + (f": {app['detail'][:60]}" if app["status"] != "ok" else "")
        cells = " | ".join(_cell(*r[name]) for name in INVARIANTS)
        lines.append(
            f"| {app['name']} | {app['toolkit']} | {part} | {status} | {len(app['screens'])} "
            f"| {cells} | {_ms(app['first_look_ms'])} | {_ms(app['later_ms'])} |"
        )
    lines += ["", "Per toolkit (and held out against tuned):", ""]
    lines += ["| group | apps | " + " | ".join(INVARIANTS) + " | first look ms (max) |"]
    lines += ["|" + "---|" * (len(INVARIANTS) + 3)]
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for app in apps:
        groups[app["toolkit"]].append(app)
    for app in apps:
        groups["held out" if app["held_out"] else "tuned"].append(app)
    groups["all"] = list(apps)
    for group, members in groups.items():
        r = rates(members)
        looks = [a["first_look_ms"] for a in members if a["first_look_ms"] is not None]
        first = f"{statistics.median(looks):.0f} ({max(looks):.0f})" if looks else "–"
        cells = " | ".join(_cell(*r[name]) for name in INVARIANTS)
        lines.append(f"| {group} | {len(members)} | {cells} | {first} |")
    lines += ["", "Failure classes (count, apps, an example):", ""]
    counts: Counter[tuple[str, str]] = Counter()
    where: dict[tuple[str, str], set[str]] = defaultdict(set)
    example: dict[tuple[str, str], str] = {}
    for app in apps:
        for screen in app["screens"]:
            for f in screen["findings"]:
                key = (f["invariant"], f["cls"])
                counts[key] += 1
                where[key].add(app["name"])
                example.setdefault(key, f"{app['name']}, {screen['screen']}: {f['example']}")
    for (invariant, cls), count in counts.most_common():
        apps_named = ", ".join(sorted(where[(invariant, cls)]))
        lines.append(
            f"* **{invariant} / {cls}**: {count} on {apps_named} — e.g. {example[(invariant, cls)]}"
        )
    return "\n".join(lines) + "\n"
