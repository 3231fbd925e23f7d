"""`openprogram worker STORE` and `openprogram runs list | cancel | requeue`: running
queued runs (openprogram.runs) and looking after them. Start at worker_command.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from typing import Any

import click

from openprogram.cli._options import one_store, store_argument, store_option
from openprogram.cli._print import json_text, say, styled
from openprogram.cli._root import cli
from openprogram.cli._stores import opened_store, resolve_id
from openprogram.core.dag import Node
from openprogram.echo import elide, mask_url
from openprogram.errors import OpenProgramError

__all__ = ["runs_group", "watch_command", "worker_command"]

_COLOUR = {"completed": "green", "error": "red", "running": "yellow", "waiting": "cyan",
           "stopped": "magenta", "unknown": "bright_magenta",
           "cancelled": "bright_black"}  # fmt: skip


@cli.command("worker")
@store_argument
@click.option("--queue", "queues", multiple=True, default=("default",), show_default=True,
              help="A queue to take runs from (repeat for several).")  # fmt: skip
@click.option("--concurrency", default=1, show_default=True, type=click.IntRange(1),
              help="Runs at once in this process (threads).")  # fmt: skip
@click.option("--import", "imports", multiple=True, metavar="MODULE",
              help="Import MODULE first (repeat for several).")  # fmt: skip
@click.option("--until-idle", is_flag=True,
              help="Exit once no run is queued or running on the queues.")  # fmt: skip
@click.option("--ray", "ray_address", default=None, metavar="ADDRESS",
              help="Run the workers as Ray actors on the cluster at ADDRESS ('auto': the "
                   "one this machine is part of; 'local': a private one).")  # fmt: skip
@click.option("--replicas", default=1, show_default=True, type=click.IntRange(1),
              help="With --ray: how many workers (actors) to place on the cluster.")  # fmt: skip
@click.option("--num-cpus", default=1.0, show_default=True, type=click.FloatRange(0),
              help="With --ray: CPUs each worker asks Ray for.")  # fmt: skip
@click.option("--num-gpus", default=0.0, show_default=True, type=click.FloatRange(0),
              help="With --ray: GPUs each worker asks Ray for.")  # fmt: skip
@click.option("--resource", "resources", multiple=True, metavar="NAME=AMOUNT",
              help="With --ray: a custom Ray resource each worker asks for.")  # fmt: skip
def worker_command(
    positional_store: str | None, store_spec: str, queues: tuple[str, ...], concurrency: int,
    imports: tuple[str, ...], until_idle: bool, ray_address: str | None, replicas: int,
    num_cpus: float, num_gpus: float, resources: tuple[str, ...],
) -> None:  # fmt: skip
    """Run the queued runs of STORE (a SQLite file or postgresql:// URL; or --store, env
    OPENPROGRAM_STORE), each inside its session, and take over the runs of workers that
    died.

    SIGTERM (or Ctrl-C) drains: each run stops at its next call boundary and goes back
    to its queue at once; a second one stops the worker now.
    """
    from openprogram.runs import Worker

    store = one_store(positional_store, store_spec)
    sys.path.insert(0, os.getcwd())  # run functions are named as from here
    for module in imports:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise click.ClickException(f"--import {module}: {exc}") from exc
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if ray_address is not None:
        asked = _resources(resources)
        _ray_workers(store, ray_address, until_idle, replicas=replicas, queues=queues,
                     concurrency=concurrency, imports=imports, num_cpus=num_cpus,
                     num_gpus=num_gpus, resources=asked)  # fmt: skip
        return
    if (replicas, num_cpus, num_gpus, resources) != (1, 1.0, 0.0, ()):
        raise click.UsageError("--replicas, --num-cpus, --num-gpus and --resource go with --ray")
    try:
        worker = Worker(store, queues=queues, concurrency=concurrency)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    start = time.monotonic()
    try:
        say(f"worker {os.getpid()} ready: {worker.queue.url}, queues {', '.join(queues)}, "
            f"{concurrency} at once", err=True)  # fmt: skip
        worker.run(until_idle=until_idle)
    except KeyboardInterrupt:  # before run() took SIGINT over (it drains on one): none taken
        pass
    say(f"worker {os.getpid()} stopped: {worker.finished} runs in "
        f"{time.monotonic() - start:.1f} s", err=True)  # fmt: skip


def _resources(pairs: tuple[str, ...]) -> dict[str, float]:
    asked: dict[str, float] = {}
    for pair in pairs:
        name, _, amount = pair.partition("=")
        try:
            asked[name] = float(amount)
        except ValueError:
            raise click.BadParameter(
                f"{pair!r} is not NAME=AMOUNT", param_hint="--resource"
            ) from None
        if not name:
            raise click.BadParameter(f"{pair!r} names no resource", param_hint="--resource")
    return asked


def _ray_workers(store: str, address: str, until_idle: bool, **options: Any) -> None:
    """`worker --ray`: RayWorkers until idle, or until SIGTERM / Ctrl-C drains them."""
    import signal
    import threading

    from openprogram.runs import RayWorkers

    stopping = threading.Event()
    if address == "local":  # a private cluster's workers name run functions as from here
        path = os.pathsep.join(p for p in (os.getcwd(), os.environ.get("PYTHONPATH")) if p)
        options["runtime_env"] = {"env_vars": {"PYTHONPATH": path}}
    try:
        workers = RayWorkers(store, address=None if address == "local" else address, **options)
        workers.start(until_idle=until_idle)
    except (OpenProgramError, ImportError) as exc:
        raise click.ClickException(str(exc)) from exc
    previous = {
        s: signal.signal(s, lambda *_: stopping.set()) for s in (signal.SIGTERM, signal.SIGINT)
    }
    say(f"{workers.replicas} Ray workers ready: {mask_url(workers.store)}, queues "
        f"{', '.join(workers.queues)}, {workers.concurrency} at once each", err=True)  # fmt: skip
    try:
        while not stopping.is_set():
            try:
                done = workers.wait(timeout=0.5)
            except TimeoutError:
                continue
            finished = sum(int(replica.get("finished") or 0) for replica in done)
            say(f"Ray workers idle: {finished} runs", err=True)
            break
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        workers.stop()


@cli.group("runs")
def runs_group() -> None:
    """Submit runs to a store's queue, list them, cancel or requeue one (openprogram.runs)."""


@runs_group.command("submit")
@click.argument("function", metavar="MODULE:FUNCTION")
@click.argument("arguments", metavar="[ARG]...", nargs=-1)
@store_option
@click.option(
    "--id",
    "run_id",
    default=None,
    help="The run's id (default: a new one); the same id again is the same run.",
)
@click.option("--queue", default="default", show_default=True, help="Which workers take it.")
@click.option(
    "--priority",
    default=0,
    show_default=True,
    type=int,
    help="Higher runs first among the due runs.",
)
@click.option("--delay", default=0.0, show_default=True, type=click.FloatRange(0),
              metavar="SECONDS", help="Seconds from now before it may start.")  # fmt: skip
def submit_run(
    function: str, arguments: tuple[str, ...], store_spec: str, run_id: str | None,
    queue: str, priority: int, delay: float,
) -> None:  # fmt: skip
    """Queue a run of MODULE:FUNCTION with ARGs for `openprogram worker` to run; print its
    id. Each ARG is a JSON value (3, true, '{"a": 1}', '"3"' for the text 3), or text
    when it is not JSON. The worker imports MODULE from its own working folder."""
    import json
    import uuid

    from openprogram.runs import submit

    values: list[Any] = []
    for number, text in enumerate(arguments, 1):
        try:
            values.append(json.loads(text))
        except ValueError:
            values.append(text)
        except RecursionError:
            raise click.BadParameter(
                f"ARG {number} is JSON nested too deep to queue", param_hint="ARG"
            ) from None
    try:
        with submit(function, *values, id=run_id or uuid.uuid4().hex[:12], store=store_spec,
                    queue=queue, priority=priority, delay=delay) as run:  # fmt: skip
            say(f"{run.id}  {run.status()}")
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc


@runs_group.command("list")
@store_option
@click.option("--state", default=None, help="Only runs in this state (queued, running, …).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def list_runs(store_spec: str, state: str | None, as_json: bool) -> None:
    """The runs of the store, oldest first."""
    from openprogram.runs import RunQueue

    try:
        with RunQueue(store_spec) as queue:
            found = queue.list_runs(state)
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        say(json_text([r.__dict__ for r in found]))
        return
    for r in found:
        ended = "" if r.ended_at is None else time.strftime(" ended %X", time.localtime(r.ended_at))
        say(f"{r.id}  {r.state:<9} {r.queue:<10} {r.function}  attempts {r.attempts}, "
            f"takeovers {r.takeovers}{ended}")  # fmt: skip
        if r.error and r.state != "completed":  # why it failed, stopped or waits
            say(f"    {elide(r.error, 200)}")


@runs_group.command("cancel")
@store_option
@click.argument("run_id")
def cancel_run(store_spec: str, run_id: str) -> None:
    """Cancel RUN_ID: a queued or waiting run at once, a running one at its next call."""
    from openprogram.runs import Run

    try:
        with Run(store_spec, run_id) as run:
            say(f"run {run_id}: {run.cancel()}")
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc


@runs_group.command("requeue")
@store_option
@click.argument("run_id")
def requeue_run(store_spec: str, run_id: str) -> None:
    """Queue waiting run RUN_ID again (its question answered, its call settled)."""
    from openprogram.runs import Run

    try:
        with Run(store_spec, run_id) as run:
            if not run.requeue():
                raise click.ClickException(f"run {run_id} is {run.status()}, not waiting")
            say(f"run {run_id}: queued")
    except OpenProgramError as exc:
        raise click.ClickException(str(exc)) from exc


@click.command("watch")
@click.argument("session_id", metavar="ID")
@store_option
@click.option("--since", default=0, type=click.IntRange(0),
              help="Start after this seq (the number after the time).")  # fmt: skip
@click.option("--forever", is_flag=True, help="Keep following after the run ends.")
def watch_command(session_id: str, store_spec: str, since: int, forever: bool) -> None:
    """Follow session ID as it is recorded, by any process: a line per node recorded or
    changed. Ends when its run ends (a queued run: when it completes, fails, is stopped
    or waits for a person; another session: when no call is running), or on Ctrl-C."""
    from openprogram.runs import RunQueue
    from openprogram.store.events import Follow, NodeEvents

    with opened_store(store_spec) as store:
        session_id = resolve_id(store, session_id)
        try:
            runs: RunQueue | None = RunQueue(store_spec)
        except OpenProgramError:
            runs = None
        try:
            ordinal = _Ordinals(store, session_id)
            queued = None if runs is None else runs.get(session_id)
            if queued is not None and queued.state == "queued":  # no worker has it yet
                queue = "" if queued.queue == "default" else f" --queue {queued.queue}"
                say(f"run {session_id} is queued: it starts when a worker takes it "
                    f"(openprogram worker {mask_url(store_spec)}{queue})")  # fmt: skip
            with NodeEvents(Follow(store, session_id, since)) as events:
                open_nodes: set[str] = set()
                seen = False
                while True:
                    for node in sorted(events.poll(1.0), key=_when):
                        seen = True
                        _watched(node, ordinal(node))
                        if node.status in ("running", "waiting"):
                            open_nodes.add(node.id)
                        else:
                            open_nodes.discard(node.id)
                    if not forever and _ended(runs, session_id, seen, open_nodes):
                        _say_end(runs, session_id)
                        return
        except KeyboardInterrupt:
            return
        finally:
            if runs is not None:
                runs.close()


class _Ordinals:
    """Each watched node's `#k` as `sessions show` and `render` number it: among the
    session's nodes of its name and kind (a fork's inherited ones too), in the order
    they were recorded."""

    def __init__(self, store: Any, session_id: str) -> None:
        from openprogram.session._loading import load_dag

        info = store.session(session_id)
        dag = load_dag(store, info) if info is not None else None
        self._known = {} if dag is None else {n.id: dag.ordinal(n) for n in dag.nodes}
        self._counts: dict[tuple[str, str], int] = {}
        for node in [] if dag is None else dag.nodes:
            key = (node.name, node.kind)
            self._counts[key] = max(self._counts.get(key, 0), self._known[node.id])

    def __call__(self, node: Node) -> int:
        found = self._known.get(node.id)
        if found is None:
            key = (node.name, node.kind)
            found = self._known[node.id] = self._counts[key] = self._counts.get(key, 0) + 1
        return found


def _when(node: Node) -> tuple[float, int]:
    """When a node's event happened (its start while it runs, else its end): what one
    look found is printed in that order, not by seq (a caller's end, committed in one
    batch with its last callees', after them)."""
    at = node.started_at if node.status in ("running", "waiting") else node.ended_at
    return (at or node.started_at or 0.0, node.seq)


def _watched(node: Node, ordinal: int) -> None:
    from openprogram.display._payload import value_text

    at = time.strftime("%H:%M:%S", time.localtime(node.ended_at or node.started_at))
    given, returned = value_text(node)
    shown = node.error or (given if node.status == "running" else returned)
    status = styled(f"{node.status:<9}", fg=_COLOUR.get(node.status))
    value = f"  {shown[:100]}" if shown else ""
    say(f"{at} {node.seq:>4} ", status, f" {node.kind} ", styled(node.name, bold=True),
        f" #{ordinal}", value)  # fmt: skip


def _say_end(runs: Any, session_id: str) -> None:
    """The last line of a watched run: how it ended, and why when it did not complete."""
    info = None if runs is None else runs.get(session_id)
    if info is None:
        return
    why = f": {elide(info.error, 300)}" if info.error and info.state != "completed" else ""
    status = styled(info.state, fg=_COLOUR.get(info.state, "red" if why else None))
    say(f"run {session_id} ", status, why)


def _ended(runs: object, session_id: str, seen: bool, open_nodes: set[str]) -> bool:
    """Whether the followed run is over: its run row ended (or waits), or, for a session
    that is no queued run, something was seen and nothing is running."""
    info = None if runs is None else runs.get(session_id)  # type: ignore[attr-defined]
    if info is not None:
        return bool(info.finished or info.state == "waiting")
    return seen and not open_nodes
