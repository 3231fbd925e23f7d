"""What every benchmark script shares: the description of the machine it ran on, and a
store of its own to measure on.

Each script prints the machine beside its numbers, so that a table pasted into
docs/performance.md carries the machine and the date. Start at machine(); BenchStore
is the store of the scripts that take `--postgres URL` or `--sqlite`.
"""

from __future__ import annotations

import os
import platform
import time
import uuid
from pathlib import Path

__all__ = ["BenchStore", "machine"]


def machine() -> str:
    """`<date>, <n> CPUs (<model>), Python <version>, <OS>, load <1-min average>` of this
    machine, now: what a table pasted into docs/performance.md must say."""
    model = platform.processor() or platform.machine() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{time.strftime('%Y-%m-%d %H:%M %Z')}, {os.cpu_count()} CPUs ({model}), "
        f"Python {platform.python_version()}, {platform.system()}, "
        f"load {os.getloadavg()[0]:.2f}"
    )


class BenchStore:
    """The store URL a benchmark records into: a fresh schema of the PostgreSQL server
    `server` (dropped after), or, with no server, the SQLite file `name`.db in `folder`.
    A context manager giving the URL."""

    def __init__(self, server: str | None, folder: Path, name: str) -> None:
        self.server = server
        self.schema = f"bench_{name}_{uuid.uuid4().hex[:8]}"
        self.url = str(folder / f"{name}.db")

    def __enter__(self) -> str:
        if not self.server:
            return self.url
        import psycopg

        with psycopg.connect(self.server, autocommit=True) as connection:
            connection.execute(f"CREATE SCHEMA {self.schema}")
        separator = "&" if "?" in self.server else "?"
        return f"{self.server}{separator}options=-csearch_path%3D{self.schema}"

    def __exit__(self, *exc: object) -> None:
        if self.server:
            import psycopg

            with psycopg.connect(self.server, autocommit=True) as connection:
                connection.execute(f"DROP SCHEMA {self.schema} CASCADE")
