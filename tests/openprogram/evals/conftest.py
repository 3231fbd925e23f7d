"""The durable stores (SQLite, PostgreSQL) the evals tests record into."""

from tests.support.stores import durable_store  # noqa: F401 - a fixture
