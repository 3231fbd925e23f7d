"""The PostgreSQL server the tests share, and a fresh schema in it per test.

scripts/test.sh starts a throwaway server and exports its URL as OPENPROGRAM_TEST_POSTGRES;
without it the PostgreSQL tests skip, saying how to start one. Start at postgres_url.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

__all__ = ["POSTGRES_ENV", "postgres_server", "postgres_url"]

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
