"""An EvalReport as HTML: the summary, one row per case run, each run's session report
one click away (display/report.py writes those). Static and self-contained."""

from __future__ import annotations

import html
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from openprogram.core import _secrets
from openprogram.core.values import replace_surrogates
from openprogram.echo import elide

if TYPE_CHECKING:
    from openprogram.evals.report import EvalReport

__all__ = ["report_fragment", "write_html"]

_STYLE = """<style>.ope{font:13px/1.4 system-ui,sans-serif;color:#1f2328}
.ope table{border-collapse:collapse;margin:6px 0 12px}
.ope td,.ope th{border:1px solid #d0d7de;padding:3px 7px;text-align:left;vertical-align:top}
.ope th{background:#f6f8fa}.ope .pass{background:#dafbe1}.ope .fail{background:#ffebe9}
.ope .err{background:#fff8c5}.ope .num{text-align:right;font-variant-numeric:tabular-nums}
</style>"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def report_fragment(report: EvalReport, links: Mapping[tuple[str, int], str] | None) -> str:
    """The report's summary and runs as one HTML fragment; `links` maps (case, repeat)
    to the href of that run's session report."""
    parts = [f'<div class="ope">{_STYLE}<h3>{_e(report.name)}</h3>']
    parts.append(
        f"<p>{len(report.dataset)} cases × {report.repeat}, function <code>"
        f"{_e(report.function)}</code>, model {_e(report.model or 'ambient')}, "
        f"{len(report.errors)} failed runs</p>"
    )
    parts.append(
        "<table><tr><th>score</th><th>mean</th><th>95% interval</th>"
        "<th>cases</th><th>errors</th></tr>"
    )
    for key, s in report.summary().items():
        mean = "–" if s.mean is None else f"{s.mean:.3f}"
        interval = "" if s.low is None or s.high is None else f"[{s.low:.3f}, {s.high:.3f}]"
        parts.append(
            f"<tr><td>{_e(key)}</td><td class=num>{mean}</td><td>{interval}</td>"
            f"<td class=num>{s.n}</td><td class=num>{s.errors}</td></tr>"
        )
    parts.append("</table>")
    keys = report.keys
    head = "".join(f"<th>{_e(k)}</th>" for k in keys)
    parts.append(f"<table><tr><th>case</th><th>run</th><th>output</th>{head}</tr>")
    for run in report.runs:
        href = None if links is None else links.get((run.case, run.repeat))
        label = _e(run.session or f"#{run.repeat}")
        link = f'<a href="{_e(href)}">{label}</a>' if href else label
        shown = f"error: {run.error}" if run.error else repr(run.output)
        cells = []
        for key in keys:
            score = run.score(key)
            if score is None:
                cells.append("<td></td>")
                continue
            css = "err" if score.error else ("pass" if (score.value or 0) >= 1 else "fail")
            text = "error" if score.error else ("–" if score.value is None else f"{score.value:g}")
            why = score.error or score.reason or ""
            cells.append(f'<td class={css} title="{_e(elide(why, 400))}">{text}</td>')
        row_class = ' class="err"' if run.error else ""
        parts.append(
            f"<tr{row_class}><td>{_e(run.case)}</td><td>{link}</td>"
            f"<td>{_e(elide(shown, 160))}</td>{''.join(cells)}</tr>"
        )
    parts.append("</table></div>")
    return replace_surrogates(_secrets.scrub("".join(parts), patterns=False))


def write_html(
    report: EvalReport,
    target: Path,
    *,
    store: Any = None,
    links: Mapping[tuple[str, int], str] | None = None,
    extra_html: str | None = None,
) -> Path:
    """Write the report page to `target` and each run's session report into
    `<target stem>.runs/`, linked from the page; returns `target`. `links`: hrefs of
    session reports written already (then none are written); `extra_html` follows the
    report on the page (trusted HTML)."""
    from openprogram.errors import UsageError

    if not target.parent.is_dir():
        raise UsageError(f"folder {str(target.parent)!r} does not exist; create it first")
    if links is None:
        links = _write_runs(report, target.with_name(f"{target.stem}.runs"), store)
    page = (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(report.name)}</title></head><body>"
        f"{report_fragment(report, links)}{extra_html or ''}</body></html>"
    )
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(page)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target


def _write_runs(report: EvalReport, folder: Path, store: Any) -> dict[tuple[str, int], str]:
    """Each run's session report in `folder`; their hrefs, relative to its parent."""
    from openprogram.display.report import write_report

    folder.mkdir(exist_ok=True)
    links: dict[tuple[str, int], str] = {}
    for run in report.runs:
        try:
            dag = report.dag(run, store=store)
        except Exception:  # a run whose session could not be made or read: no link
            continue
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{run.case}-{run.repeat}").lstrip(".")
        facts = {"case": run.case, "repeat": run.repeat, "error": run.error or "none"}
        write_report(dag, folder / f"{name}.html", title=f"{report.name}: {run.case}", facts=facts)
        links[(run.case, run.repeat)] = f"{folder.name}/{name}.html"
    return links
