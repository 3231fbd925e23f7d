"""The durable stores tests with child processes run against: SQLite and PostgreSQL.

`durable_store` is what a program passes as `Session(store=...)` or
`SharedBudget(store=...)`: a SQLite file path, or a postgresql:// URL into a schema of
its own (tests/support/postgres.py; skipped, saying so, without a server).
"""

from __future__ import annotations

from pathlib import Path

import pytest

__all__ = ["durable_store"]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def durable_store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store that outlives the process, shared with child processes."""
    if request.param == "sqlite":
        return str(tmp_path / "sessions.db")
    return str(request.getfixturevalue("postgres_url"))
