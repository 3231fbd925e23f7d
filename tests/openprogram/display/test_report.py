"""The HTML report: one self-contained file, written exactly where asked."""

from __future__ import annotations

import pytest

from openprogram.display import report_html, write_report
from openprogram.errors import UsageError
from tests.openprogram.display.views import payload


def test_report_is_one_html_page_holding_the_dag_view(tagline_session, tmp_path):
    target = tmp_path / "run.html"

    written = write_report(tagline_session, target)

    assert written == target
    assert [p.name for p in tmp_path.iterdir()] == ["run.html"]  # no temporary left over
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert f"<title>session {tagline_session.id}</title>" in page
    assert len(payload(page)["nodes"]) == len(tagline_session.dag)
    assert "https://" not in page and "http://" not in page


def test_report_of_a_dag_takes_a_title_facts_a_focus_and_extra_html(tagline_session):
    dag = tagline_session.dag
    frame = dag.find(name="write_tagline", kind="code")[0]

    page = report_html(
        dag, title="a <run>", focus=frame.id, facts={"steps": 3}, extra_html="<p id=x>ok</p>"
    )

    assert "<title>a &lt;run&gt;</title>" in page
    assert '<p id=x>ok</p></div><div class="opv"' in page
    data = payload(page)
    assert data["facts"] == [["steps", "3"]]
    assert data["nodes"][data["focus"]][0] == frame.id


def test_report_replaces_an_existing_file(tagline_session, tmp_path):
    target = tmp_path / "run.html"
    target.write_text("old")

    write_report(tagline_session.dag, target)

    assert target.read_text(encoding="utf-8").startswith("<!doctype html>")


def test_report_refuses_a_missing_folder_or_a_folder_as_the_file(tagline_session, tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        write_report(tagline_session, tmp_path / "missing" / "run.html")
    with pytest.raises(UsageError, match="is a folder"):
        write_report(tagline_session, tmp_path)
    with pytest.raises(UsageError, match="pass a Session or a ContextDAG"):
        write_report(object(), tmp_path / "run.html")
    assert list(tmp_path.iterdir()) == []
