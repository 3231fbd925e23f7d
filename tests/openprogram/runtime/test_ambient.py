"""llm() and allm() as a type checker sees them: the reply text, a `response_format`
instance, or a stream of text chunks, never `Any` (mypy over typed_calls.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.typing_check import TYPED_CALLS, mypy_reports


@pytest.mark.slow
@pytest.mark.xdist_group(TYPED_CALLS)  # one mypy run for every typed file (typing_check)
@pytest.mark.timeout(960)
def test_llm_and_allm_return_what_is_asked_for_to_mypy() -> None:
    assert mypy_reports(Path(__file__).with_name("typed_calls.py")) == ""
