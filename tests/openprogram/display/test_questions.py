"""A run waiting on ask_user shows its question: in the text tree, the notebook view and
the HTML report (painted by the script in headless Chromium)."""

from __future__ import annotations

import pytest

from openprogram import RunWaiting, Session, agentic_function, ask_user
from openprogram.display import dag_html, write_report
from openprogram.display._payload import build_payload
from tests.openprogram.display.test_browser import chromium  # noqa: F401 - a fixture


@agentic_function
def book(hotel: str) -> str:
    return ask_user(f"Book <b>{hotel}</b>?", choices=["yes", "no"])


@pytest.fixture
def waiting() -> Session:
    with pytest.raises(RunWaiting), Session() as session:
        book("Ritz")
    return session


def test_the_text_tree_marks_the_waiting_calls_and_the_question(waiting):
    tree = waiting.dag.tree()
    assert "⏸  book #1" in tree
    (question,) = waiting.pending()
    assert f"waiting for an answer ({question.id}): Book <b>Ritz</b>?" in tree


def test_the_notebook_view_lists_the_question_and_how_to_answer_it(waiting):
    (question,) = waiting.pending()
    page = dag_html(waiting.dag)
    assert "<b>2</b> waiting" in page
    assert "Waiting for an answer</b> (1)" in page
    assert "Book &lt;b&gt;Ritz&lt;/b&gt;?" in page  # escaped, never markup
    assert f"session.answer({question.id!r}, value)" in page.replace("&#39;", "'")  # escaped quotes
    payload = build_payload(waiting.dag)
    assert payload["questions"][0][:3] == [question.id, "Book <b>Ritz</b>?", 'one of "yes", "no"']
    assert payload["summary"]["statuses"]["waiting"] == 2


def test_an_answered_question_leaves_the_list(waiting):
    (question,) = waiting.pending()
    waiting.answer(question.id, "no")
    assert "Waiting for an answer" not in dag_html(waiting.dag)


@pytest.mark.browser
def test_the_report_paints_the_waiting_rows_with_their_question(waiting, tmp_path, chromium):  # noqa: F811
    report = write_report(waiting, tmp_path / "run.html")
    dom = chromium("--dump-dom", report.as_uri())
    assert 'class="opv-row opv-s-w"' in dom
    assert "⏸ waiting: Book &lt;b&gt;Ritz&lt;/b&gt;?" in dom


def test_a_long_question_keeps_its_end_in_the_views():
    @agentic_function
    def send(body: str, path: str) -> str:
        return ask_user(f"send({body!r}, path={path!r})?", choices=["yes", "no"])

    with pytest.raises(RunWaiting), Session() as session:
        send("x" * 5_000, "/root/.ssh/id_rsa")
    payload = build_payload(session.dag)
    shown = payload["questions"][0][1]
    assert shown.endswith("path='/root/.ssh/id_rsa')?") and "characters elided" in shown
    assert len(shown) < 2_100
