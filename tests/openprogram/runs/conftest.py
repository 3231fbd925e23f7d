"""The stores the run tests use: SQLite and PostgreSQL (tests/support/stores.py)."""

from tests.support.stores import durable_store  # noqa: F401 - a fixture
