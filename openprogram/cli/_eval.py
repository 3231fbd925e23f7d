"""The `openprogram eval` command: run a dataset through a function and show the scores.

Owns its command-line handling (the function by MODULE:FUNCTION, scorers by name, the
provider, a progress line, the table, --compare with a saved report, also on the HTML
page); the eval itself is openprogram.evals'. cli.py adds it; never imports cli.py.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

import click

from openprogram.cli._options import provider_kwargs, provider_options
from openprogram.cli._print import say
from openprogram.cli._progress import Progress

__all__ = ["eval_command"]

_SCORERS = ("equals", "contains", "matches_schema", "max_cost", "max_latency", "llm_judge",
            "no_loop")  # fmt: skip


def _runtime_env(text: str | None) -> dict[str, Any] | None:
    """--runtime-env's JSON object, or a UsageError saying what it must be."""
    from openprogram.errors import UsageError

    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"--runtime-env is not JSON ({exc}); give an object") from None
    except RecursionError:
        raise UsageError("--runtime-env nests too deeply; give a plain JSON object") from None
    if not isinstance(value, dict):
        raise UsageError('--runtime-env must be a JSON object, e.g. {"working_dir": "."}')
    return value


def _scorer(spec: str) -> Any:
    """A scorer named on the command line: a built-in (`equals`, `contains:TEXT`,
    `max_cost:0.01`, `max_latency:5`, `llm_judge:RUBRIC`, `no_loop` or `no_loop:N`) or
    MODULE:FUNCTION."""
    from openprogram.evals import contains, equals, llm_judge, max_cost, max_latency, no_loop
    from openprogram.evals._running import resolve_function

    name, _, argument = spec.partition(":")
    try:
        if name == "equals" and not argument:
            return equals
        if name == "contains" and argument:
            return contains(argument)
        if name == "llm_judge" and argument.strip():
            return llm_judge(argument)  # asks the runs' model: --model, --api-base
        if name == "no_loop":
            return no_loop(int(argument)) if argument else no_loop()
        if name == "max_cost" and argument:
            return max_cost(float(argument))
        if name == "max_latency" and argument:
            return max_latency(float(argument))
    except ValueError:
        raise click.BadParameter(f"{spec!r}: {name} takes a number, e.g. {name}:0.5") from None
    if name in _SCORERS:
        raise click.BadParameter(
            f"{spec!r}: write equals, contains:TEXT, max_cost:USD, max_latency:SECONDS, "
            "llm_judge:RUBRIC or no_loop[:TIMES]"
        )
    return resolve_function(spec)


def _runs_and_time() -> Any:
    """The eval bar's note: runs done of all, and the seconds since it started."""
    started = time.monotonic()
    return lambda done, total: f"{done}/{total} runs, {time.monotonic() - started:.1f} s"


@click.command("eval")
@click.argument("dataset_path", metavar="DATASET")
@click.argument("function", metavar="MODULE:FUNCTION")
@click.option(
    "--scorer",
    "-s",
    "scorer_specs",
    multiple=True,
    metavar="SCORER",
    help="equals (default), contains:TEXT, max_cost:USD, max_latency:SECONDS, "
    "llm_judge:RUBRIC (asks the runs' model), no_loop[:TIMES] or MODULE:FUNCTION; repeat "
    "for several.",
)
@click.option(
    "--model", "-m", default=None, help="Model for every run (default: OPENPROGRAM_MODEL)."
)
@provider_options
@click.option("--scorer-timeout", "scorer_timeout", type=click.FloatRange(min=0, min_open=True),
              default=120.0, show_default=True, metavar="SECONDS",
              help="Seconds a scorer (a judge too) may take on one run; then its error is "
              "recorded.")  # fmt: skip
@click.option("--repeat", "-n", type=click.IntRange(min=1), default=1, help="Runs of each case.")
@click.option("--concurrency", "-j", type=click.IntRange(min=1), default=1, help="Runs at a time.")
@click.option("--store", "store_spec", default=None, metavar="PATH|URL",
              help="Record every run's session here (default: in memory).")  # fmt: skip
@click.option("--save", "save_path", default=None, metavar="FILE.json", help="Save the report.")
@click.option("--html", "html_path", default=None, metavar="FILE.html",
              help="Write the HTML report, each run's session report linked.")  # fmt: skip
@click.option("--compare", "previous", default=None, metavar="FILE.json",
              help="A saved report to compare with, case by case (also on the --html "
              "page).")  # fmt: skip
@click.option("--cases", "show_cases", is_flag=True, help="Show one line per case.")
@click.option("--id", "eval_id", default=None, metavar="ID",
              help="Name this eval; the same ID and --store again resume it.")  # fmt: skip
@click.option("--engine", type=click.Choice(["local", "ray"]), default="local",
              show_default=True,
              help="ray: each run a Ray task (-j at a time), recorded in --store.")  # fmt: skip
@click.option("--address", default=None, metavar="HOST:PORT",
              help="The Ray cluster to join (default: a private local Ray).")  # fmt: skip
@click.option("--runtime-env", "runtime_env", default=None, metavar="JSON",
              help="Ray's runtime environment for the workers, e.g. "
                   '\'{"working_dir": "."}\'.')  # fmt: skip
def eval_command(
    dataset_path: str,
    function: str,
    scorer_specs: tuple[str, ...],
    model: str | None,
    api_base: str | None,
    api_key_env: str | None,
    scorer_timeout: float,
    repeat: int,
    concurrency: int,
    store_spec: str | None,
    save_path: str | None,
    html_path: str | None,
    previous: str | None,
    show_cases: bool,
    eval_id: str | None,
    engine: str,
    address: str | None,
    runtime_env: str | None,
) -> None:
    """Run every case of DATASET (.yaml, .json or .jsonl) through MODULE:FUNCTION, score
    each run and print the table.

    \b
    MODULE is imported as `python -m` would (the current folder first). Exits with
    status 1 when --compare finds a significant regression, or a score of the saved
    report that cannot be compared.
    Example: openprogram eval cases.jsonl agents:book_hotel -s equals --repeat 3
    Offline: openprogram eval cases.jsonl agents:book_hotel --model openai/local
    --api-base http://127.0.0.1:8000/v1 --api-key-env LOCAL_KEY -s "llm_judge:Polite?"
    On Ray: openprogram eval cases.jsonl agents:book_hotel --engine ray -j 8 --store runs.db
    """
    from contextlib import nullcontext

    from openprogram import Runtime
    from openprogram.errors import OpenProgramError, UsageError
    from openprogram.evals import Dataset, EvalReport, equals

    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # MODULE names a file here, as with `python -m`
    try:
        dataset = Dataset.load(dataset_path)
        baseline = EvalReport.load(previous) if previous else None
        scorers = [_scorer(spec) for spec in scorer_specs] or [equals]
        environment = _runtime_env(runtime_env)
        provider = provider_kwargs(api_base, api_key_env)
        if provider and engine == "ray":
            raise UsageError(
                "--api-base and --api-key-env are for --engine local; Ray workers read their "
                "provider from their environment (--runtime-env '{\"env_vars\": {...}}')"
            )
        # the provider's settings ride on an ambient Runtime every run (and judge) uses
        runtime = Runtime(model, **provider) if provider else None
        with runtime if runtime is not None else nullcontext():
            report = dataset.evaluate(
                function,
                scorers,
                repeat=repeat,
                concurrency=concurrency,
                model=None if runtime is not None else model,
                store=store_spec,
                progress=Progress(len(dataset) * repeat, note=_runs_and_time()),
                id=eval_id,
                engine="ray" if engine == "ray" else "local",
                address=address,
                runtime_env=environment,
                scorer_timeout=scorer_timeout,
            )
        if runtime is not None:
            report.model = model or os.environ.get("OPENPROGRAM_MODEL")
        say(report.table(cases=show_cases))
        if save_path:
            say(f"saved {report.save(save_path, store=store_spec)}", err=True)
        if html_path:
            say(f"wrote {report.write_html(html_path, baseline=baseline)}", err=True)
        if baseline is not None:
            comparison = baseline.compare(report)
            click.echo("")
            say(comparison.table())
            if comparison.regressions or comparison.uncompared:
                raise SystemExit(1)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
