"""Shared fixtures: every test starts with no default session or runtime around."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.fixture(autouse=True)
def _fresh_defaults(monkeypatch: pytest.MonkeyPatch):
    from openprogram import _context, runtime

    monkeypatch.delenv("OPENPROGRAM_MODEL", raising=False)
    _context.reset_default_session()
    runtime._default.clear()
    yield
    _context.reset_default_session()
    runtime._default.clear()
