"""Shared fixtures: every test starts with no default session or runtime around."""

from __future__ import annotations

import os

import pytest

from tests.support.postgres import postgres_url  # noqa: F401 - a fixture for every test

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _fresh_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory):
    from openprogram import _context

    monkeypatch.delenv("OPENPROGRAM_MODEL", raising=False)
    # component memory and other user data go to a scratch folder, never the real home
    monkeypatch.setenv("OPENPROGRAM_DATA_DIR", str(tmp_path_factory.mktemp("data")))
    _context.reset_defaults()
    yield
    _context.reset_defaults()
