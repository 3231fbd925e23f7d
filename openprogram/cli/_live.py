"""`openprogram sessions serve STORE`: a store's sessions and runs in the browser, each
DAG updated live (openprogram.live). Named under `sessions` because `openprogram serve`
is gui_harness's command (a private X display over HTTP).
"""

from __future__ import annotations

from pathlib import Path

import click

from openprogram.cli._options import one_store, store_argument
from openprogram.cli._print import say
from openprogram.echo import echo, mask_url
from openprogram.errors import OpenProgramError

__all__ = ["serve_command"]


@click.command("serve")
@store_argument
@click.option("--port", default=0, type=click.IntRange(0, 65535),
              help="Port on 127.0.0.1 (default: any free one).")  # fmt: skip
@click.option("--max-streams", default=8, show_default=True, type=click.IntRange(1, 256),
              help="Live pages (event streams) open at once.")  # fmt: skip
@click.option("--idle", "idle_s", default=300.0, show_default=True,
              type=click.FloatRange(1),
              help="Seconds a stream lasts with no event (the page reconnects).")  # fmt: skip
def serve_command(
    positional_store: str | None, store_spec: str, port: int, max_streams: int, idle_s: float
) -> None:
    """Show the sessions and runs of STORE (a SQLite file or postgresql:// URL; or
    --store) in the browser, each run's DAG updated as any process records it. Binds
    127.0.0.1 and prints the URL to open, with this start's token (every request needs
    it)."""
    from openprogram.live import LiveServer

    store = one_store(positional_store, store_spec)

    if "://" not in store and not Path(store).expanduser().is_file():
        raise click.ClickException(
            f"no session store at {echo(store)}: give the SQLite file or postgresql:// URL "
            "the runs record into"
        )
    try:
        server = LiveServer(
            store, port=port, max_streams=max_streams, max_connections=max(32, 4 * max_streams),
            idle_s=idle_s,
        )  # fmt: skip
    except (OpenProgramError, ImportError) as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    try:  # a Ctrl-C from the moment the URL is out stops it quietly
        say(f"serving {mask_url(server.store_url)}; open {server.url}", err=False)
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stopping.set()
        server.cut_connections()
        server.server_close()
