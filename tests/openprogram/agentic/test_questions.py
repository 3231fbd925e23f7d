"""questions.py: what an answer may be, and what an approval shows a person."""

from __future__ import annotations

import pytest

from openprogram import Question, Session, UsageError
from openprogram.agentic.questions import approval, check

NUMBER = Question(id="q1", text="How many?", schema={"type": "number"})
ANY = Question(id="q2", text="What?", schema={})


@pytest.mark.parametrize(
    "answer", ["NaN", "Infinity", "-Infinity", float("nan"), float("inf"), '{"x": NaN}']
)
def test_nan_and_infinity_are_refused_for_a_number_answer(answer):
    with pytest.raises(UsageError, match="NaN and infinity are not numbers JSON can hold"):
        check(NUMBER if not str(answer).startswith("{") else ANY, answer)
    assert check(NUMBER, "1.5") == 1.5


def test_a_deeply_nested_answer_is_a_usage_error_not_a_recursion_error():
    deep = "[" * 20_000 + "]" * 20_000
    with pytest.raises(UsageError, match="nested too deeply: an answer holds at most 100"):
        check(ANY, deep)
    nested: list = []
    for _ in range(20_000):
        nested = [nested]
    with pytest.raises(UsageError, match="nested too deeply"):
        check(ANY, nested)
    assert check(ANY, "[" * 50 + "]" * 50) is not None


def test_text_that_is_not_utf8_is_refused_as_an_answer():
    with pytest.raises(UsageError, match="not UTF-8 text"):
        check(Question(id="q3", text="Name?"), "\ud800")
    with pytest.raises(UsageError, match="not UTF-8 text"):
        check(ANY, {"\udcff": 1})


def test_an_approval_shows_every_argument_whatever_comes_first():
    text = approval("write", {"content": "x" * 10_000, "path": "/root/.ssh/id_rsa"})
    assert text.endswith(", path='/root/.ssh/id_rsa')?") and len(text) < 500
    assert "characters elided]…" in text and "(sha256 " in text
    other = approval("write", {"content": "x" * 9_999 + "y", "path": "/root/.ssh/id_rsa"})
    assert other != text  # calls that differ anywhere ask different questions


def test_an_approval_escapes_control_characters_in_names_and_values():
    text = approval("tool\x1b]0;owned\x07", {"\x1b[2J\x1b[Hpath": "a\u202eb", "n": "\x9b31m"})
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "\x9b" not in text
    assert text.startswith("Allow tool\\x1b]0;owned\\x07(\\x1b[2J\\x1b[Hpath=")


@pytest.mark.parametrize("bad", ["\ud800", "a\udcffb"])
def test_a_session_id_that_is_not_utf8_is_a_usage_error(bad, tmp_path):
    with pytest.raises(UsageError, match="is not valid text"):
        Session(str(tmp_path / "s.db"), id=bad)
    with Session(str(tmp_path / "s.db"), id="fine") as session:
        said = session.submit("hello")
    with pytest.raises(UsageError, match="is not valid text"):
        Session.open(str(tmp_path / "s.db"), bad)
    with pytest.raises(UsageError, match="is not valid text"):
        Session.open(str(tmp_path / "s.db"), "fine").fork(at=said.id, id=bad)
