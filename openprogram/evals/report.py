"""What an eval found, run by run, and its summaries: RunResult and ReportData.

Owns the report's records (RunResult, one per case run; ReportData, the public
EvalReport's data), its summaries per scorer, the text table, each run's DAG, saving and
loading (a saved report notes itself as a reader of its runs' sessions, so retention
keeps them). Data only: its HTML is _html.py's, comparing two reports compare.py's, and the
public EvalReport (evaluation.py) adds the replay tiers and the views. Start at
ReportData.summary().
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, Field, PrivateAttr, ValidationError

from openprogram.core import _secrets
from openprogram.core.dag import ContextDAG
from openprogram.echo import echo, elide, printable
from openprogram.errors import OpenProgramError, UsageError
from openprogram.evals._scores import ScoreResult
from openprogram.evals.dataset import DatasetData, first_problem, log, read_by, read_text
from openprogram.evals.statistics import Summary, summarize

__all__ = ["MAX_CASES", "ReportData", "RunResult"]

REPORT_FORMAT = 1

MAX_CASES = 2000
"""Cases a report's case lines and page show (changed cases of a comparison first); the
rest are counted."""

_R = TypeVar("_R", bound="ReportData")


class RunResult(BaseModel):
    """One run of one case: its session, output (stored form) or error, duration in
    seconds, model cost in USD, and every score."""

    case: str
    repeat: int = 0
    session: str | None = None
    output: Any = None
    error: str | None = None
    duration_s: float = 0.0
    cost_usd: float = 0.0
    scores: list[ScoreResult] = Field(default_factory=list)

    def score(self, key: str) -> ScoreResult | None:
        """The score named `key` (`scorer` or `function/scorer`), if this run has one."""
        return next((s for s in self.scores if s.key == key), None)


class ReportData(BaseModel):
    """The runs of an eval, and what they add up to: the public EvalReport's data.

    `store` is where the runs' sessions are (None: their DAGs are kept in the report
    itself, and saved with it).
    """

    id: str
    name: str
    dataset: DatasetData
    function: str
    model: str | None = None
    repeat: int = 1
    agentic: bool = True
    """Whether the function was an agentic function (each run is then its first call);
    a plain function's run is every node it made."""
    store: str | None = None
    created_at: float = 0.0
    runs: list[RunResult] = Field(default_factory=list)
    format: int = REPORT_FORMAT
    _dags: dict[tuple[str, int], ContextDAG] = PrivateAttr(default_factory=dict)

    def keep_dag(self, run: RunResult, dag: ContextDAG) -> None:
        """Keep a run's DAG with the report (the runner does: rescore reads it)."""
        self._dags[(run.case, run.repeat)] = dag

    # -- reading -------------------------------------------------------------------------
    @property
    def keys(self) -> list[str]:
        """The scores' names, in the order the scorers were given."""
        found: dict[str, None] = {}
        for run in self.runs:
            for score in run.scores:
                found.setdefault(score.key, None)
        return list(found)

    @property
    def errors(self) -> list[RunResult]:
        """The runs that failed (their function raised, or could not be called)."""
        return [run for run in self.runs if run.error is not None]

    def case_values(self, key: str) -> dict[str, float]:
        """Each case's mean value of score `key` over its repeats (cases whose every
        score of it is missing or an error are left out)."""
        sums: dict[str, list[float]] = {}
        for run in self.runs:
            score = run.score(key)
            if score is not None and score.value is not None:
                sums.setdefault(run.case, []).append(score.value)
        return {case: sum(values) / len(values) for case, values in sums.items()}

    def summary(self) -> dict[str, Summary]:
        """Per score: the mean over cases, a 95% interval, cases scored, scorer errors."""
        result = {}
        for key in self.keys:
            scores = [s for run in self.runs if (s := run.score(key)) is not None]
            binary = all(s.binary or s.value in (0.0, 1.0) for s in scores if s.value is not None)
            errors = sum(1 for s in scores if s.error is not None)
            result[key] = summarize(
                list(self.case_values(key).values()), binary=binary, errors=errors
            )
        return result

    def worst(self, key: str | None = None, n: int = 5) -> list[tuple[str, float, str | None]]:
        """The `n` lowest-scoring cases on `key` (default: the first score), each as
        (case, value, the reason or error of its lowest run)."""
        key = key or (self.keys[0] if self.keys else None)
        if key is None:
            return []
        values = self.case_values(key)
        failed = {run.case for run in self.runs if (s := run.score(key)) and s.error}
        rows: list[tuple[str, float, str | None]] = []
        for case in {*values, *failed}:
            runs = [(run, run.score(key)) for run in self.runs if run.case == case]
            lowest = min(
                (s for _, s in runs if s is not None),
                key=lambda s: -1.0 if s.value is None else s.value,
            )
            rows.append((case, values.get(case, float("nan")), lowest.error or lowest.reason))
        rows.sort(key=lambda row: (row[1] == row[1], row[1]))  # errors (nan) first
        return rows[:n]

    def failures(self, threshold: float | Mapping[str, float]) -> list[str]:
        """The scores whose mean is below `threshold` (one number for every score, or
        `{score: minimum}`), each as a line; empty when all pass. A score named in the
        mapping that the report lacks is a failure too."""
        summary = self.summary()
        wanted = (
            dict(threshold)
            if isinstance(threshold, Mapping)
            else {key: float(threshold) for key in summary}
        )
        problems = []
        for key, minimum in wanted.items():
            found = summary.get(key)
            if found is None:
                problems.append(f"{key}: no such score; the report has {list(summary)}")
            elif found.mean is None or found.mean < minimum:
                mean = "none" if found.mean is None else f"{found.mean:.3f}"
                problems.append(f"{key}: mean {mean} < {minimum:g}")
        return problems

    def check(self: _R, threshold: float | Mapping[str, float], *, worst: int = 5) -> _R:
        """Raise AssertionError when a score's mean is below `threshold` (see failures):
        the message holds the table and, per failing score, its `worst` cases. Returns
        the report when every score passes (the pytest plugin's check_eval calls this)."""
        problems = self.failures(threshold)
        if not problems:
            return self
        lines = ["eval below threshold:", *(f"  {p}" for p in problems), "", self.table(), ""]
        for problem in problems:
            key = problem.partition(":")[0]
            if key in self.keys:
                lines.append(f"worst cases on {key}:")
                for case, value, why in self.worst(key, worst):
                    shown = "error" if value != value else f"{value:.2f}"
                    lines.append(
                        f"  {case}: {shown}  {printable(elide(why or '', 160), newlines=False)}"
                    )
        raise AssertionError("\n".join(lines))

    def table(self, *, cases: bool = False, width: int = 100) -> str:
        """The report as text: one line per score (mean, 95% interval, cases, scorer
        errors), the failed runs, and with `cases=True` one line per case."""
        lines = [
            f"{printable(self.name, newlines=False)}: {len(self.dataset)} cases"
            + (f" x {self.repeat}" if self.repeat > 1 else "")
            + f", {self.function}"
            + (f", model {self.model}" if self.model else "")
        ]
        summary = self.summary()
        name_width = max([5, *(len(k) for k in summary)])
        name_width = min(name_width, 48)
        lines.append(f"{'score':<{name_width}}  {'mean':>6}  {'95% interval':<15}  cases  errors")
        for key, s in summary.items():
            mean = "-" if s.mean is None else f"{s.mean:6.3f}"
            interval = "" if s.low is None or s.high is None else f"[{s.low:.3f}, {s.high:.3f}]"
            shown = elide(key, name_width)
            lines.append(
                f"{shown:<{name_width}}  {mean:>6}  {interval:<15}  {s.n:>5}  {s.errors:>6}"
            )
        cost = sum(run.cost_usd for run in self.runs)
        took = sum(run.duration_s for run in self.runs)
        lines.append(
            f"runs: {len(self.runs)}, failed: {len(self.errors)}, cost ${cost:.4f}, "
            f"time in calls {took:.2f} s"
        )
        for run in self.errors[:5]:
            where = f"{run.case}" + (f" #{run.repeat}" if self.repeat > 1 else "")
            shown = printable(elide(run.error or "", 2 * width), newlines=False)
            lines.append(f"  {printable(where, newlines=False)}: {shown}")
        if cases:
            lines.extend(self._case_lines(width))
        return "\n".join(lines)

    def _case_lines(self, width: int) -> list[str]:
        """Each case: its inputs, expected output, and per run the output and each
        scorer's verdict (✔ ✗ ! or the value) with its reason."""

        def line(text: str, room: int) -> str:
            return printable(elide(" ".join(text.split()), max(20, room)), newlines=False)

        def value(data: Any) -> str:
            if isinstance(data, str):
                return repr(data)
            try:
                return json.dumps(data, ensure_ascii=False, default=str)
            except (ValueError, RecursionError):
                return repr(data)

        runs: dict[str, list[RunResult]] = {}
        for run in sorted(self.runs, key=lambda r: r.repeat):
            runs.setdefault(run.case, []).append(run)
        lines = ["", "cases:"]
        for case in self.dataset.cases[:MAX_CASES]:
            source = case.metadata.get("call") or case.metadata.get("session")
            lines.append(line(case.name or "", width) + (f"  (from {source})" if source else ""))
            given = ("turns", case.turns) if case.turns else ("inputs", case.inputs)
            lines.append(f"  {given[0]:<9} " + line(value(given[1]), width - 12))
            if case.expected is not None:
                lines.append("  expected  " + line(value(case.expected), width - 12))
            for run in runs.get(case.name or "", []):
                what = f"error: {run.error}" if run.error else value(run.output)
                lines.append(f"  #{run.repeat + 1} output " + line(what, width - 12))
                for score in run.scores:
                    if score.error is not None:
                        mark, why = "!", score.error
                    elif score.value is None:
                        mark, why = "·", score.reason or ""
                    elif score.binary or score.value in (0.0, 1.0):
                        mark, why = ("✔" if score.value >= 1 else "✗"), score.reason or ""
                    else:
                        mark, why = f"{score.value:g}", score.reason or ""
                    text = f"{mark} {score.key}" + (f": {why}" if why else "")
                    lines.append("     " + line(text, width - 5))
        if len(self.dataset.cases) > MAX_CASES:
            lines.append(f"... and {len(self.dataset.cases) - MAX_CASES} more cases")
        return lines

    def __str__(self) -> str:
        return self.table()

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-able data (without the runs' DAGs)."""
        data: dict[str, Any] = json.loads(self.model_dump_json())
        return data

    # -- the DAGs ------------------------------------------------------------------------
    def dag(self, run: RunResult, *, store: object = None) -> ContextDAG:
        """The recorded DAG of `run`: kept with the report, else read from its store
        (`store` overrides the report's, e.g. a URL whose password is not saved)."""
        found = self._dags.get((run.case, run.repeat))
        if found is not None:
            return found
        spec = store or self.store
        if spec is None or run.session is None:
            raise UsageError(
                f"run {run.case!r} #{run.repeat} has no recorded DAG: the report was saved "
                "without one and names no store; evaluate with store=... to keep runs"
            )
        from openprogram.session.session import Session

        session = Session.open(spec, run.session)
        try:
            dag = session.dag
        finally:
            session.close()
        self._dags[(run.case, run.repeat)] = dag
        return dag

    # -- files ---------------------------------------------------------------------------
    @property
    def reader(self) -> str:
        """The name a saved report reads its runs' sessions by: "report:ID"."""
        return f"report:{self.id}"

    def save(self, path: str | os.PathLike[str], *, store: object = None) -> Path:
        """Write the report as JSON to `path`; runs recorded without a store keep their
        DAGs in the file, so it can be rescored anywhere. Returns the path.

        Runs recorded in a store stay there, and the file points at them: the store
        notes the report ("report:ID", `reader`) as a reader of their sessions, so
        `sessions prune` keeps them until `release()`. `store` overrides where they are
        (the report keeps its URL without the password); a store that cannot be reached
        or written is said so in the log, the file written all the same."""
        data = self.to_dict()
        if self.store is None:
            data["dags"] = {
                f"{case}#{repeat}": dag.to_dict() for (case, repeat), dag in self._dags.items()
            }
        target = Path(path).expanduser()
        temporary = target.with_name(f".{target.name}.tmp")
        text = _secrets.scrub_json(json.dumps(data, ensure_ascii=False, default=str)) or ""
        temporary.write_text(text, encoding="utf-8")
        os.replace(temporary, target)
        self._note_reader({run.session for run in self.runs if run.session}, self.reader, store)
        return target

    def _note_reader(self, sessions: set[str], reader: str, store: object) -> None:
        """Note `reader` as a reader of `sessions` in the runs' store (`store` overrides
        it); a store that cannot be reached or written is said so in the log."""
        spec = store or self.store
        if spec is None or not sessions:
            return
        try:
            resolved, owns = _opened(spec)
        except (OpenProgramError, ImportError) as exc:
            log.warning("openprogram: %s: its sessions could not be kept from prune: %s",
                        reader, exc)  # fmt: skip
            return
        try:
            read_by(resolved, sessions, reader)
        finally:
            if owns and resolved is not None:
                resolved.close()

    def release(self, *, store: object = None) -> int:
        """Let go of the runs' sessions save() kept: `sessions prune` may remove them
        once nothing else reads them (this report's DAGs are then gone from the store).
        `store` overrides where they are. Returns how many it let go; raises StoreError
        or UsageError when the store cannot be opened or written."""
        spec = store or self.store
        if spec is None:
            return 0
        resolved, owns = _opened(spec)
        if resolved is None or not callable(getattr(resolved, "unread", None)):
            return 0
        try:
            return int(resolved.unread(self.reader))
        finally:
            if owns:
                resolved.close()

    @classmethod
    def load(cls: type[_R], path: str | os.PathLike[str]) -> _R:
        """Read a report `save` wrote. Raises UsageError when it is missing or not one."""
        target = Path(path).expanduser()
        text = read_text(target, "report")  # a regular file, bounded, UTF-8
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise UsageError(f"{str(target)!r} is not a saved EvalReport: {exc}") from None
        except RecursionError:
            raise UsageError(
                f"{str(target)!r} is not a saved EvalReport: it nests too deeply"
            ) from None
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("format", 0), int)
            or (data.get("format", 0) > REPORT_FORMAT)
        ):
            raise UsageError(
                f"{str(target)!r} is not an EvalReport this version reads "
                f"(format {echo(data.get('format') if isinstance(data, dict) else '?', 40)})"
            )
        dags = data.pop("dags", None) or {}
        if not isinstance(dags, dict):
            raise UsageError(f"{str(target)!r} is not a saved EvalReport: 'dags' is not a mapping")
        try:
            report = cls.model_validate(data)
        except ValidationError as exc:
            raise UsageError(
                f"{str(target)!r} is not a saved EvalReport: {first_problem(exc)}"
            ) from None
        except RecursionError:
            raise UsageError(
                f"{str(target)!r} is not a saved EvalReport: it nests too deeply"
            ) from None
        for run in report.runs:
            stored = dags.get(f"{run.case}#{run.repeat}")
            if stored is not None:
                try:
                    report.keep_dag(run, ContextDAG.from_dict(stored))
                except (RecursionError, Exception) as exc:
                    raise UsageError(
                        f"{str(target)!r}: the recorded DAG of run {echo(run.case, 60)} "
                        f"#{run.repeat} cannot be read ({type(exc).__name__}: "
                        f"{elide(str(exc), 200)})"
                    ) from None
        return report


def _opened(spec: Any) -> tuple[Any, bool]:
    """open_store(spec), but a SQLite file that is not there (the report was moved to
    another machine) is an error rather than a new empty store."""
    from openprogram.store.open import open_store

    if isinstance(spec, str) and spec != "memory" and "://" not in spec:
        path = spec
    elif isinstance(spec, str) and spec.startswith("sqlite:///"):
        path = spec[len("sqlite:///") :].partition("?")[0]
    else:
        return open_store(spec)
    if path != ":memory:" and not Path(path).expanduser().exists():
        raise UsageError(f"no session store at {echo(spec)}: the report's runs are not there")
    return open_store(spec)
