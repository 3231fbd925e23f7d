"""The store backends every test in this folder runs against: memory, SQLite, PostgreSQL
(`durable_store`, the two that outlive a process, is tests/support/stores.py's).

`store` is what a program passes as `Session(store=...)`: a MemoryStore object, a SQLite
file path, or a postgresql:// URL into a schema of its own (dropped afterwards). The
PostgreSQL variant needs OPENPROGRAM_TEST_POSTGRES (scripts/postgres.sh start prints
one) and skips, saying so, without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from openprogram.store import MemoryStore
from tests.support.stores import durable_store  # noqa: F401 - a fixture


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    if request.param == "memory":
        return MemoryStore()
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
