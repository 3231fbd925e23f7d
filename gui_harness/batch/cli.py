"""`openprogram batch`, `openprogram bench miniwob` and `bench desktop`: their options.

Owns parsing and printing for the two commands; gui_harness/commands.py forwards their
arguments here (openprogram never imports gui_harness). The work is run_batch's.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from gui_harness.batch.episode import ORACLE
from gui_harness.batch.run import run_batch
from gui_harness.batch.summary import BatchResult, summary_table
from openprogram.cli import provider_options
from openprogram.echo import echo, printable
from openprogram.errors import OpenProgramError, UsageError
from openprogram.evals import EvalReport

__all__ = ["batch_main", "bench_main", "parse_seeds"]

_DEFAULT_MINIWOB = ("click-button", "click-checkboxes", "enter-text", "login-user", "click-dialog")


def _engine_options(command: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--workers",
                default=1,
                show_default=True,
                type=click.IntRange(min=1),
                help="Episodes at once.",
            ),
            click.option(
                "--engine",
                type=click.Choice(["local", "ray"]),
                default="local",
                show_default=True,
                help="A local process pool, or Ray tasks.",
            ),
            click.option(
                "--address",
                help="Join this Ray cluster (host:port or ray://host:port);"
                " default: a private local Ray.",
            ),
            click.option(
                "--runtime-env",
                "runtime_env",
                callback=_json_object,
                metavar="JSON",
                help="Ray runtime environment for the episodes, e.g. "
                '\'{"env_vars": {"OPENPROGRAM_DATA_DIR": "/data"}}\' (docs/scale.md).',
            ),
            click.option(
                "--store",
                "store",
                envvar="OPENPROGRAM_BATCH_STORE",
                metavar="PATH|URL",
                help="Where sessions and results go (default: OUT/batch.db); "
                "postgresql://… for a cluster.",
            ),
            click.option(
                "--model",
                envvar="OPENPROGRAM_MODEL",
                help="litellm model for tasks without their own; 'oracle' plans MiniWoB++ offline.",
            ),
            provider_options,
            click.option(
                "--out",
                type=click.Path(file_okay=False, path_type=Path),
                help="Where summary.json, index.html and episode reports go.",
            ),
            click.option(
                "--name",
                help="The batch's name: a rerun with the same name and "
                "store skips finished episodes.",
            ),
            click.option(
                "--threshold",
                type=click.FloatRange(0.0, 1.0),
                help="Exit 1 when the success rate is below this (0 to 1). Default: 1 with "
                "--model oracle (the harness's ceiling: any miss is a regression), else none.",
            ),
            click.option(
                "--compare",
                type=click.Path(dir_okay=False, path_type=Path),
                metavar="REPORT.json",
                help="An earlier run's report.json: compare case by case; exit 1 on a "
                "significant regression.",
            ),
            click.option(
                "--max-attempts",
                default=2,
                show_default=True,
                type=click.IntRange(min=1),
                help="Tries per episode whose worker dies.",
            ),
        ]
    ):
        command = option(command)
    return command


def _json_object(context: Any, parameter: Any, value: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"{echo(value)} is not JSON: {exc.msg}") from None
    if not isinstance(parsed, dict):
        raise click.BadParameter(f"{echo(value)} is not a JSON object")
    return parsed


def _report(
    result: BatchResult, threshold: float | None = None, baseline: EvalReport | None = None
) -> int:
    """Print the batch's outcome (per task, then as an EvalReport: `openprogram eval`'s
    table, and compared with `baseline`); the exit status: 2 when task lines were bad, 1
    when an episode could not run (every attempt failed), the success rate is below
    `threshold` or the comparison finds a significant regression, else 0."""
    for problem in result.problems:
        click.echo(f"skipped a bad task: {problem}", err=True)
    click.echo(summary_table(result.summary))
    report = result.report
    click.echo(f"\n{report.table()}")
    click.echo(
        f"{len(result.episodes)} episodes: ran {result.ran} attempts, skipped "
        f"{result.skipped} finished before, retried {result.retries}; "
        f"{result.seconds:.1f}s"
    )
    click.echo(f"Summary: {result.summary_path}\nReport: {result.report_path}")
    if result.eval_path is not None:
        click.echo(f"EvalReport: {result.eval_path} (compare a later run with --compare)")
    regressed = False
    if baseline is not None:
        comparison = baseline.compare(report)
        click.echo(f"\n{comparison.table()}")
        regressed = bool(comparison.regressions)
    failed = [e for e in result.episodes if e.get("status") == "failed"]
    for episode in failed:
        click.echo(
            f"could not run {printable(str(episode.get('id')))}: "
            f"{printable(str(episode.get('detail')))}",
            err=True,
        )
    below = threshold is not None and result.success_rate < threshold
    if below:
        click.echo(
            f"the success rate {result.success_rate:.0%} is below the threshold {threshold:.0%}",
            err=True,
        )
    if result.problems:
        return 2
    return 1 if failed or below or regressed else 0


def _threshold(given: float | None, model: str | None) -> float | None:
    """The success rate a run must reach: the one given, else 1 for the oracle (it
    measures the harness's ceiling, so any miss is a regression), else none."""
    if given is None and model == ORACLE:
        return 1.0
    return given


def _run(threshold: float | None = None, compare: Path | None = None, **options: Any) -> int:
    try:
        baseline = EvalReport.load(compare) if compare is not None else None  # before running
        return _report(run_batch(**options), _threshold(threshold, options.get("model")), baseline)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command(name="batch")
@click.argument("tasks_file", type=click.Path(dir_okay=False, path_type=Path))
@_engine_options
def batch_command(tasks_file: Path, name: str | None, out: Path | None, **options: Any) -> None:
    """Run each task of TASKS_FILE (JSON lines) as one gui_agent episode on its own
    desktop; print a summary table and write summary.json and index.html."""
    name = name or tasks_file.stem
    sys.exit(_run(tasks=tasks_file, name=name, out=out or Path(f"batch-{name}"), **options))


def parse_seeds(text: str) -> list[int]:
    """ "0-4" or "0,3,7" (or both, "0-2,9") as a list of seeds; UsageError when malformed."""
    seeds: list[int] = []
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            seeds.extend(range(int(first), int(last or first) + 1))
    except ValueError:
        raise UsageError(f"--seeds {echo(text)} is not like '0-4' or '0,3,7'") from None
    if not seeds:
        raise UsageError(f"--seeds {echo(text)} names no seed")
    return seeds


@click.group(name="bench")
def bench_group() -> None:
    """Measure gui_agent on benchmarks."""


@bench_group.command(name="miniwob")
@click.option(
    "--tasks",
    "task_names",
    help="Comma-separated MiniWoB++ tasks (default: "
    f"{','.join(_DEFAULT_MINIWOB)}); 'oracle' runs every task the oracle knows.",
)
@click.option("--seeds", default="0-4", show_default=True, help="Seeds, e.g. 0-4 or 0,3,7.")
@click.option("--max-steps", default=15, show_default=True, type=click.IntRange(min=1))
@click.option(
    "--context-tokens",
    type=click.IntRange(min=1),
    help="Keep every plan prompt within this many tokens (gui_agent's context_tokens).",
)
@_engine_options
def miniwob_command(task_names: str | None, seeds: str, max_steps: int,
                    context_tokens: int | None, name: str | None, out: Path | None,
                    **options: Any) -> None:  # fmt: skip
    """Run MiniWoB++ tasks in a real Chromium on private displays; the page's own reward
    judges each episode. --model oracle measures the harness's ceiling offline."""
    try:
        from gui_harness.bench.miniwob import check_task
        from gui_harness.bench.oracle import ORACLE_TASKS

        chosen = (
            list(ORACLE_TASKS)
            if task_names == "oracle"
            else [
                t.strip()
                for t in (task_names or ",".join(_DEFAULT_MINIWOB)).split(",")
                if t.strip()
            ]
        )
        for task in chosen:
            check_task(task)
        numbers = parse_seeds(seeds)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    tasks = [
        {"id": f"{task}-{seed}", "benchmark": f"miniwob/{task}", "seed": seed,
         "max_steps": max_steps, "context_tokens": context_tokens}
        for task in chosen for seed in numbers
    ]  # fmt: skip
    name = name or "miniwob"
    sys.exit(_run(tasks=tasks, name=name, out=out or Path(f"batch-{name}"), **options))


@bench_group.command(name="desktop")
@click.option(
    "--tasks",
    "task_ids",
    help="Comma-separated task ids (default: every task of the suite or of --tasks-dir).",
)
@click.option(
    "--tasks-dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run your own desktop task files (*.json, docs/gui.md) instead of the shipped suite.",
)
@click.option(
    "--max-steps", type=click.IntRange(min=1), help="Steps per episode (default: the task's)."
)
@click.option(
    "--context-tokens",
    type=click.IntRange(min=1),
    help="Keep every plan prompt within this many tokens (gui_agent's context_tokens).",
)
@_engine_options
def desktop_command(task_ids: str | None, tasks_dir: Path | None, max_steps: int | None,
                    context_tokens: int | None, name: str | None, out: Path | None,
                    **options: Any) -> None:  # fmt: skip
    """Run desktop tasks (LibreOffice, GTK, Qt, Tk, Chromium, file dialogs) on private
    displays; each task's evaluator judges the apps' real output. --model oracle plays
    each task's oracle steps offline: the harness's ceiling on real apps."""
    try:
        from gui_harness.bench.desktop_spec import load_desktop_tasks, suite_dir

        folder = (tasks_dir or suite_dir()).resolve()
        suite = load_desktop_tasks(folder)
        if task_ids:
            wanted = [t.strip() for t in task_ids.split(",") if t.strip()]
            known = {t.id for _, t in suite}
            unknown = [t for t in wanted if t not in known]
            if unknown:
                raise UsageError(
                    f"no desktop task {echo(unknown[:5])} in {echo(str(folder))}; it has "
                    f"{echo(sorted(known)[:20])}"
                )
            suite = [(p, t) for p, t in suite if t.id in wanted]
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    tasks = [
        {"id": t.id, "benchmark": f"desktop/{t.id}", "max_steps": max_steps or t.max_steps,
         "context_tokens": context_tokens, **({"task_file": str(path)} if tasks_dir else {})}
        for path, t in suite
    ]  # fmt: skip
    name = name or "desktop"
    sys.exit(_run(tasks=tasks, name=name, out=out or Path(f"batch-{name}"), **options))


def batch_main(args: list[str]) -> int:
    """`openprogram batch ARGS` (gui_harness/commands.py forwards here)."""
    return _main(batch_command, args, "openprogram batch")


def bench_main(args: list[str]) -> int:
    """`openprogram bench ARGS` (gui_harness/commands.py forwards here)."""
    return _main(bench_group, args, "openprogram bench")


def _main(command: click.Command, args: list[str], prog_name: str) -> int:
    try:
        command.main(args=args, prog_name=prog_name, standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except SystemExit as exc:
        return int(exc.code or 0)
    return 0
