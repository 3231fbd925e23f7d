"""An eval report as HTML: the summary, every case with its inputs, expected output, each
run's output and each scorer's verdict and reason, the comparison with a baseline case
by case with its statistics in words, each run's session report one click away
(display/report.py writes those). Rendered through pages (templates/eval_report.html.j2,
autoescaped, the one stylesheet inline); static, self-contained.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openprogram.core import _secrets
from openprogram.core.values import replace_surrogates
from openprogram.echo import elide
from openprogram.evals.compare import Comparison, compare
from openprogram.evals.report import MAX_CASES, ReportData, RunResult
from openprogram.pages import render, trusted, write_page

__all__ = ["report_fragment", "write_html"]

VALUE_LIMIT = 1500
"""Characters of an input, expected value or output a page shows."""


def shown(value: object, limit: int = VALUE_LIMIT) -> str:
    """A value as a page shows it: text as itself, anything else as indented JSON; cut."""
    if value is None:
        return "—"
    if isinstance(value, str):
        return elide(value, limit)
    try:
        if isinstance(value, dict) and all(
            isinstance(v, (str, int, float, bool, type(None))) for v in value.values()
        ):  # keyword arguments: one `name: value` line each
            return elide(
                "\n".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items()),
                limit,
            )
        text = json.dumps(value, ensure_ascii=False, indent=1, default=str)
    except (ValueError, RecursionError):
        text = repr(value)
    return elide(text, limit)


def _score_cell(score: Any) -> dict[str, str]:
    if score is None:
        return {"css": "", "mark": "·", "why": "not scored"}
    if score.error is not None:
        return {"css": "err", "mark": "! error", "why": score.error}
    value = score.value
    if value is None:
        return {"css": "", "mark": "·", "why": score.reason or ""}
    if score.binary or value in (0.0, 1.0):
        mark = "✔ pass" if value >= 1 else "✗ fail"
    else:
        mark = f"{value:g}"
    return {"css": "pass" if value >= 1 else "fail", "mark": mark, "why": score.reason or ""}


def _report_view(
    report: ReportData, links: Mapping[tuple[str, int], str] | None, order: list[str] | None
) -> dict[str, Any]:
    keys = report.keys
    runs: dict[str, list[RunResult]] = {}
    for run in sorted(report.runs, key=lambda r: r.repeat):
        runs.setdefault(run.case, []).append(run)
    cases = {case.name: case for case in report.dataset.cases}
    names = list(dict.fromkeys([*(order or []), *cases, *runs]))
    rows = []
    for name in names[:MAX_CASES]:
        case = cases.get(name)
        inputs: Any = None if case is None else (case.turns if case.turns else case.inputs)
        metadata = {} if case is None else case.metadata
        source = metadata.get("call") or metadata.get("session")
        run_rows = []
        for run in runs.get(name or "", []):
            href = None if links is None else links.get((run.case, run.repeat))
            label = run.session or f"#{run.repeat + 1}"  # the session it is recorded as
            run_rows.append(
                {
                    "href": href,
                    "label": label,
                    "error": run.error is not None,
                    "output": shown(run.error) if run.error else shown(run.output),
                    "scores": [_score_cell(run.score(key)) for key in keys],
                }
            )
        if not run_rows:
            continue
        rows.append(
            {
                "name": name,
                "source": None if source in (None, name) else f"from {source}",
                "inputs": ("turns: " if case is not None and case.turns else "") + shown(inputs),
                "expected": shown(None if case is None else case.expected),
                "runs": run_rows,
            }
        )
    summary = []
    for key, s in report.summary().items():
        summary.append(
            {
                "key": key,
                "mean": "–" if s.mean is None else f"{s.mean:.3f}",
                "interval": ""
                if s.low is None or s.high is None
                else f"[{s.low:.3f}, {s.high:.3f}]",
                "n": s.n,
                "errors": s.errors,
            }
        )
    return {
        "name": report.name,
        "cases": len(report.dataset),
        "repeat": report.repeat,
        "function": report.function,
        "model": report.model or "ambient",
        "failed": len(report.errors),
        "summary": summary,
        "score_keys": keys,
        "case_rows": rows,
        "more": max(0, len(names) - MAX_CASES),
    }


def _comparison_view(comparison: Comparison, report: ReportData) -> dict[str, Any]:
    keys = [k for k in report.keys if k in comparison.changes]
    cases = {case.name: case for case in report.dataset.cases}
    scores = []
    for key in keys:
        c = comparison.changes[key]
        verdict = "no change"
        if c.significant:
            verdict = "significantly better" if c.difference > 0 else "significantly worse"
        elif c.flipped:
            verdict = "not significant"
        scores.append(
            {
                "key": key,
                "before": f"{c.baseline:.3f}",
                "after": f"{c.candidate:.3f}",
                "change": f"{c.difference:+.3f}",
                "interval": f"[{c.low:+.3f}, {c.high:+.3f}]",
                "p": f"{c.p_value:.3g}",
                "verdict": verdict,
                "css": ("better" if c.difference > 0 else "worse") if c.significant else "",
                "words": c.explain(comparison.alpha),
            }
        )
    rows = []
    for change in comparison.cases[:MAX_CASES]:
        case = cases.get(change.case)
        inputs = None if case is None else (case.turns if case.turns else case.inputs)
        rows.append(
            {
                "name": change.case,
                "inputs": shown(inputs, 300),
                "cells": [
                    {
                        "before": change.before.get(key) or "·",
                        "after": change.after.get(key) or "·",
                        "moved": change.moved.get(key, ""),
                    }
                    for key in keys
                ],
            }
        )
    return {
        "baseline": comparison.baseline,
        "score_keys": keys,
        "scores": scores,
        "uncompared": comparison.uncompared,
        "cases": rows,
        "more": max(0, len(comparison.cases) - MAX_CASES),
    }


def report_fragment(
    report: ReportData,
    links: Mapping[tuple[str, int], str] | None,
    *,
    comparison: Comparison | None = None,
    extra_html: str | None = None,
    styled: bool = True,
) -> str:
    """The report as one HTML fragment: summary, the comparison with a baseline (when
    given), every case. `links` maps (case, repeat) to the href of that run's session
    report; `extra_html` (trusted) closes the fragment; `styled`: the stylesheet inline
    (False: the page around it has it)."""
    order = None if comparison is None else [c.case for c in comparison.cases]
    text = render(
        "eval_report.html.j2",
        styled=styled,
        r=_report_view(report, links, order),
        c=None if comparison is None else _comparison_view(comparison, report),
        extra=trusted(extra_html or ""),
    )
    return replace_surrogates(_secrets.scrub(text, patterns=False))


def write_html(
    report: ReportData,
    target: Path,
    *,
    store: object = None,
    links: Mapping[tuple[str, int], str] | None = None,
    extra_html: str | None = None,
    baseline: ReportData | None = None,
) -> Path:
    """Write the report page to `target` and each run's session report into
    `<target stem>.runs/`, linked from the page; returns `target`. `links`: hrefs of
    session reports written already (then none are written); `extra_html` follows the
    report on the page (trusted HTML); `baseline`: a report to compare with, shown case
    by case with the statistics in words."""
    from openprogram.errors import UsageError

    if not target.parent.is_dir():
        raise UsageError(f"folder {str(target.parent)!r} does not exist; create it first")
    comparison = None if baseline is None else compare(baseline, report)
    if links is None:
        links = _write_runs(report, target.with_name(f"{target.stem}.runs"), store)
    body = report_fragment(
        report, links, comparison=comparison, extra_html=extra_html, styled=False
    )
    page = render("page.html.j2", title=report.name, kind="op-page", body=trusted(body))
    return write_page(target, replace_surrogates(_secrets.scrub(page, patterns=False)))


def run_file_names(report: ReportData) -> dict[tuple[str, int], str]:
    """A file name for each run's session report: the case name and repeat made safe,
    distinct for distinct runs however alike their case names read once made safe
    (`a/b` and `a_b`), also on a file system that ignores case."""
    names: dict[tuple[str, int], str] = {}
    taken: set[str] = set()
    for run in report.runs:
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{run.case}-{run.repeat}").lstrip(".")[:80]
        name, count = base or "run", 1
        while name.casefold() in taken:
            count += 1
            name = f"{base}~{count}"
        taken.add(name.casefold())
        names[(run.case, run.repeat)] = f"{name}.html"
    return names


def _write_runs(report: ReportData, folder: Path, store: object) -> dict[tuple[str, int], str]:
    """Each run's session report in `folder`; their hrefs, relative to its parent."""
    from openprogram.display.report import write_report

    folder.mkdir(exist_ok=True)
    links: dict[tuple[str, int], str] = {}
    names = run_file_names(report)
    for run in report.runs:
        try:
            dag = report.dag(run, store=store)
        except Exception:  # a run whose session could not be made or read: no link
            continue
        name = names[(run.case, run.repeat)]
        facts = {"case": run.case, "repeat": run.repeat, "error": run.error or "none"}
        write_report(dag, folder / name, title=f"{report.name}: {run.case}", facts=facts)
        links[(run.case, run.repeat)] = f"{folder.name}/{name}"
    return links
