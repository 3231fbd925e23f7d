"""The store backends every test in this folder runs against: memory, SQLite, PostgreSQL.

`store` is what a program passes as `Session(store=...)`: a MemoryStore object, a SQLite
file path, or a postgresql:// URL into a schema of its own (dropped afterwards). The
PostgreSQL variant needs OPENPROGRAM_TEST_POSTGRES (scripts/postgres.sh start prints
one) and skips, saying so, without it.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from openprogram.store import MemoryStore

POSTGRES_ENV = "OPENPROGRAM_TEST_POSTGRES"


def postgres_server() -> str:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        pytest.skip(
            f"{POSTGRES_ENV} is not set: no PostgreSQL server to test against "
            "(start one with `scripts/postgres.sh start` and export the URL it prints)"
        )
    return url


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A postgresql:// URL whose tables go into a fresh schema, dropped after the test."""
    psycopg = pytest.importorskip("psycopg", reason='needs pip install "openprogram[postgres]"')
    server = postgres_server()
    schema = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA {schema}")
    separator = "&" if "?" in server else "?"
    yield f"{server}{separator}options=-csearch_path%3D{schema}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "memory":
        return MemoryStore()
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def durable_store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    """A store that outlives the process: for tests with subprocesses."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return request.getfixturevalue("postgres_url")


@pytest.fixture(autouse=True)
def _fresh_programs() -> Iterator[None]:
    from tests.openprogram.store import programs

    programs.executed.clear()
    programs.asked.clear()
    programs.checkpoint = programs._no_stop
    yield
    programs.checkpoint = programs._no_stop
