"""What a batch reports: BatchResult, the summary table, summary.json and index.html.

Owns aggregating episode results per task and over the batch (success rate, steps,
tokens, cost, time per episode) and writing them; each episode's own report is a
session report (openprogram.display.report). Running belongs to run.py.
"""

from __future__ import annotations

import html
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["BatchResult", "summarise", "summary_table"]

_COLUMNS = ("task", "episodes", "success", "steps", "tokens", "cost $", "s/episode")


@dataclass
class BatchResult:
    """What a batch did: one result per episode (in task order), the tasks-file lines it
    could not use, what it ran, skipped and retried, and where it wrote its reports."""

    episodes: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    ran: int = 0
    skipped: int = 0
    retries: int = 0
    seconds: float = 0.0
    summary_path: Path | None = None
    report_path: Path | None = None

    @property
    def success_rate(self) -> float:
        """Successful episodes / episodes (0.0 for none)."""
        return (
            sum(bool(e["success"]) for e in self.episodes) / len(self.episodes)
            if self.episodes
            else 0.0
        )

    @property
    def summary(self) -> dict[str, Any]:
        """Per task and overall: episodes, success rate and means (see summarise)."""
        return summarise(self.episodes)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: the summary, every episode, the problems and the run's counts."""
        return {
            "summary": self.summary,
            "episodes": self.episodes,
            "problems": self.problems,
            "ran": self.ran,
            "skipped": self.skipped,
            "retries": self.retries,
            "seconds": round(self.seconds, 3),
        }


def _row(name: str, episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    count = len(episodes)

    def mean(key: str) -> float:
        values = [float(e.get(key) or 0) for e in episodes]
        return sum(values) / count if count else 0.0

    return {
        "task": name,
        "episodes": count,
        "success_rate": sum(bool(e["success"]) for e in episodes) / count if count else 0.0,
        "steps": mean("steps"),
        "tokens": mean("tokens"),
        "cost_usd": mean("cost_usd"),
        "seconds": mean("seconds"),
        "failed_runs": sum(e.get("status") == "failed" for e in episodes),
    }


def summarise(episodes: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """{"tasks": [one row per task name, in first-seen order], "total": one row}; each
    row has episodes, success_rate and per-episode means of steps, tokens, cost_usd and
    seconds, and failed_runs (episodes whose every attempt crashed)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for episode in episodes:
        groups.setdefault(str(episode["name"]), []).append(episode)
    return {
        "tasks": [_row(name, group) for name, group in groups.items()],
        "total": _row("all", episodes),
    }


def summary_table(summary: dict[str, Any]) -> str:
    """The summary as a plain-text table, one line per task and a total line."""
    rows = [*summary["tasks"], summary["total"]]
    cells = [
        [
            str(r["task"])[:40],
            str(r["episodes"]),
            f"{r['success_rate']:.0%}",
            f"{r['steps']:.1f}",
            f"{r['tokens']:.0f}",
            f"{r['cost_usd']:.4f}",
            f"{r['seconds']:.1f}",
        ]
        for r in rows
    ]
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(_COLUMNS)]
    line = lambda values: "  ".join(  # noqa: E731
        v.ljust(w) if i == 0 else v.rjust(w)
        for i, (v, w) in enumerate(zip(values, widths, strict=True))
    )
    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(_COLUMNS), rule, *(line(c) for c in cells[:-1]), rule, line(cells[-1])])


def write_summary(result: BatchResult, directory: Path) -> Path:
    """Write summary.json (atomically) into `directory`; returns its path."""
    path = directory / "summary.json"
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(result.to_dict(), indent=2, default=str), encoding="utf-8")
    os.replace(partial, path)
    return path


def write_index(result: BatchResult, directory: Path, title: str) -> Path:
    """Write index.html: the summary table and one row per episode linking its report."""
    summary = result.summary
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)

    def task_row(r: dict[str, Any]) -> str:
        values = (
            r["task"], r["episodes"], f"{r['success_rate']:.0%}", f"{r['steps']:.1f}",
            f"{r['tokens']:.0f}", f"{r['cost_usd']:.4f}", f"{r['seconds']:.1f}",
        )  # fmt: skip
        return "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in values) + "</tr>"

    episodes = []
    for e in result.episodes:
        report = e.get("report")
        link = (
            f'<a href="{html.escape(report)}">{html.escape(e["id"])}</a>'
            if report
            else html.escape(e["id"])
        )
        mark = "✓" if e["success"] else "✗"
        reward = "" if e.get("reward") is None else f"{e['reward']:g}"
        episodes.append(
            f"<tr><td>{link}</td><td>{mark}</td><td>{html.escape(str(e.get('status')))}</td>"
            f"<td>{html.escape(str(e['name'])[:60])}</td><td>{reward}</td>"
            f"<td>{e.get('steps', 0)}</td>"
            f"<td>{html.escape(str(e.get('detail') or '')[:120])}</td></tr>"
        )
    problems = "".join(f"<li>{html.escape(p)}</li>" for p in result.problems)
    page = f"""<!doctype html><html><head><meta charset="utf-8">
<title>{html.escape(title)}</title>
<style>body{{font:14px system-ui,sans-serif;margin:2em}}
table{{border-collapse:collapse;margin-bottom:2em}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:left}}th{{background:#f3f4f6}}</style>
</head>
<body><h1>{html.escape(title)}</h1>
<p>{len(result.episodes)} episodes, success {result.success_rate:.0%}; ran {result.ran}, skipped
{result.skipped} (finished before), retried {result.retries}.</p>
<h2>Per task</h2><table><tr>{head}</tr>{"".join(task_row(r) for r in summary["tasks"])}
{task_row(summary["total"])}</table>
<h2>Episodes</h2><table><tr><th>id</th><th></th><th>status</th><th>task</th><th>reward</th>
<th>steps</th><th>detail</th></tr>{"".join(episodes)}</table>
{f"<h2>Tasks not run</h2><ul>{problems}</ul>" if problems else ""}
</body></html>"""
    path = directory / "index.html"
    path.write_text(page, encoding="utf-8")
    return path
