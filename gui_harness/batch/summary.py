"""What a batch reports: BatchResult, its EvalReport, the summary table, summary.json,
report.json and index.html.

Owns aggregating episode results per task and over the batch (success rate, steps,
tokens, cost, time per episode), the batch as an openprogram.evals.EvalReport (each
task a case, its success and reward scores, its session a run) and writing them; each
episode's own report is a session report (openprogram.display.report). Running belongs
to run.py.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.core import _secrets
from openprogram.echo import mask_url
from openprogram.evals import Case, Dataset, EvalReport, RunResult, ScoreResult
from openprogram.pages import render

__all__ = ["BatchResult", "eval_report", "summarise", "summary_table"]

_COLUMNS = ("task", "episodes", "success", "steps", "tokens", "cost $", "s/episode")


@dataclass
class BatchResult:
    """What a batch did: one result per episode (in task order), the tasks-file lines it
    could not use, what it ran, skipped and retried, and where it wrote its reports;
    `report` is the same as an EvalReport (saved as report.json)."""

    episodes: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)
    ran: int = 0
    skipped: int = 0
    retries: int = 0
    seconds: float = 0.0
    summary_path: Path | None = None
    report_path: Path | None = None
    name: str = "batch"
    store: str | None = None
    model: str | None = None
    eval_path: Path | None = None
    created_at: float = field(default_factory=time.time)

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

    @property
    def report(self) -> EvalReport:
        """The batch as an EvalReport (see eval_report): `.table()`, `.compare(other)`."""
        return eval_report(self)

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


def eval_report(result: BatchResult) -> EvalReport:
    """The batch as an EvalReport, id and dataset named after the batch: each task a case
    (named by its id, so two runs of a bench pair up in `.compare`), its episode the
    case's run (its session, steps and tokens as output, cost, seconds), scored by
    `success` (pass/fail: the page's reward or the task's evaluator) and, where the
    benchmark gives one, `reward`. An episode that could not run is the run's error and
    scores 0, as a failed eval run does."""
    cases, runs = [], []
    rewarded = any(episode.get("reward") is not None for episode in result.episodes)
    for episode in result.episodes:
        case = str(episode["id"])
        inputs = {"task": episode.get("name")}
        if episode.get("instruction"):
            inputs["instruction"] = episode["instruction"]
        cases.append(Case(name=case, inputs=inputs, metadata={"task": episode.get("name")}))
        runs.append(
            RunResult(
                case=case,
                session=episode.get("session"),
                output={key: episode.get(key) for key in _OUTPUT if key in episode},
                error=str(episode.get("detail")) if episode.get("status") == "failed" else None,
                duration_s=float(episode.get("seconds") or 0.0),
                cost_usd=float(episode.get("cost_usd") or 0.0),
                scores=_scores(episode, rewarded),
            )
        )
    store = result.store
    if store is not None and "://" not in store:
        store = os.path.abspath(store)  # the report may be read from another folder
    return EvalReport(
        id=result.name,
        name=f"batch {result.name}",
        dataset=Dataset(name=result.name, cases=cases),
        function="gui_harness.batch.episode:batch_episode",
        model=result.model,
        store=None if store is None else mask_url(_secrets.scrub(store)),
        created_at=result.created_at,
        runs=runs,
    )


_OUTPUT = ("success", "reward", "steps", "tokens", "stop_reason", "agent_success", "attempts")


def _scores(episode: dict[str, Any], rewarded: bool) -> list[ScoreResult]:
    failed = episode.get("status") == "failed"
    why = str(episode.get("detail") or "") or None
    if failed:
        why = f"the run failed: {why}"
    scores = [
        ScoreResult(
            scorer="success",
            value=1.0 if episode.get("success") and not failed else 0.0,
            binary=True,
            reason=why,
        )
    ]
    if episode.get("reward") is not None or (failed and rewarded):
        reward = 0.0 if failed else float(episode["reward"])
        scores.append(ScoreResult(scorer="reward", value=reward, reason=why))
    return scores


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

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            v.ljust(w) if i == 0 else v.rjust(w)
            for i, (v, w) in enumerate(zip(values, widths, strict=True))
        )

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(_COLUMNS), rule, *(line(c) for c in cells[:-1]), rule, line(cells[-1])])


def write_summary(result: BatchResult, directory: Path) -> Path:
    """Write summary.json and the EvalReport's report.json (each atomically) into
    `directory`; returns summary.json's path (`result.eval_path` is report.json's).

    Both name the episodes' sessions, so saving report.json notes the batch as their
    reader ("report:NAME"): `sessions prune` keeps them until `EvalReport.load(
    "report.json").release(store=...)` or `openprogram sessions unread report:NAME`. The
    note goes to the store the batch recorded into, not through the name the report
    keeps of it (credentials masked, which may not open it)."""
    path = directory / "summary.json"
    partial = path.with_suffix(".json.partial")
    partial.write_text(json.dumps(result.to_dict(), indent=2, default=str), encoding="utf-8")
    os.replace(partial, path)
    result.eval_path = result.report.save(directory / "report.json", store=result.store)
    return path


def write_index(result: BatchResult, directory: Path, title: str) -> Path:
    """Write index.html: the EvalReport's page (each episode's run linked to its session
    report), then the per-task table and the tasks not run."""
    report = result.report
    report.name = title
    links = {(str(e["id"]), 0): str(e["report"]) for e in result.episodes if e.get("report")}
    return report.write_html(directory / "index.html", links=links, extra_html=_batch_html(result))


def _batch_html(result: BatchResult) -> str:
    summary = result.summary

    def task_row(r: dict[str, Any]) -> tuple[Any, ...]:
        return (
            r["task"], r["episodes"], f"{r['success_rate']:.0%}", f"{r['steps']:.1f}",
            f"{r['tokens']:.0f}", f"{r['cost_usd']:.4f}", f"{r['seconds']:.1f}",
        )  # fmt: skip

    return render(
        "gui_harness:templates/batch.html.j2",
        episodes=len(result.episodes),
        success=f"{result.success_rate:.0%}",
        ran=result.ran,
        skipped=result.skipped,
        retried=result.retries,
        columns=_COLUMNS,
        rows=[*(task_row(r) for r in summary["tasks"]), task_row(summary["total"])],
        problems=result.problems,
    )
