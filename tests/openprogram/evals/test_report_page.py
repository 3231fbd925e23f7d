"""The eval report people read (issue 44): cases named by their inputs, the page and the
table showing inputs, expected, outputs and every verdict with its reason, and
`--compare --html` putting the comparison case by case, its statistics in words."""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm
from openprogram.cli import cli
from openprogram.evals import Case, Dataset, EvalReport, equals
from openprogram.testing import OpenAIServer
from tests.openprogram.display.test_browser import chromium  # noqa: F401  (a fixture)
from tests.openprogram.evals.agents import reply, write
from tests.openprogram.evals.scripted import COFFEES, OTHERS

SCRIPT = "tests.openprogram.evals.scripted"


def _invoke(*arguments: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["eval", *arguments], prog_name="openprogram", env=env)


class _Text(HTMLParser):
    """The text a reader sees: no attributes (a title= tooltip is not seen), no style."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._style = False

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self._style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._style = False

    def handle_data(self, data: str) -> None:
        if not self._style:
            self.parts.append(data)


def visible_text(page: str) -> str:
    parser = _Text()
    parser.feed(page)
    return " ".join(" ".join(parser.parts).split())


@agentic_function
def answer(ticket: str, customer: str = "") -> str:
    return llm(f"Answer the support ticket: {ticket}")


def test_cases_from_sessions_are_named_by_their_inputs_with_the_session_kept(tmp_path) -> None:
    store = tmp_path / "support.db"
    tickets = [
        "My card was charged twice for the March invoice, please refund one",
        "My card was charged twice for the March invoice, please refund one!",
        "Where is my parcel?",
    ]
    ids = []
    with Runtime(ScriptedModel(lambda request: "We are on it.")):
        for ticket in [*tickets, tickets[2].replace("?", " ?")]:
            with Session(store) as session:
                answer(ticket, customer="c-1")
            ids.append(session.id)
    dataset = Dataset.from_sessions(store, "answer")
    assert [c.name for c in dataset.cases] == [
        "My card was charged twice for the March invoice, please ref…",
        "My card was charged twice for the March invoice, please ref… (2)",
        "Where is my parcel?",
        "Where is my parcel ?",
    ]
    assert [c.metadata["session"] for c in dataset.cases] == ids
    report = dataset.evaluate(answer, [equals], model=ScriptedModel(lambda request: "Soon."))
    table = report.table(cases=True)
    assert f"Where is my parcel?  (from {ids[2]})" in table
    assert '  inputs    {"ticket": "Where is my parcel?", "customer": "c-1"}' in table
    assert "  expected  'We are on it.'" in table and "  #1 output 'Soon.'" in table
    assert "     ✗ equals: expected 'We are on it.', got 'Soon.'" in table


def test_compare_with_html_puts_each_case_before_and_after_and_the_statistics_in_words(
    tmp_path,
) -> None:
    products = [*COFFEES, *OTHERS]
    cases = Dataset(
        name="taglines",
        cases=[Case(inputs={"product": p}, expected=f"Smart {p}.") for p in products],
    ).save(tmp_path / "cases.yaml")
    before, page = tmp_path / "v1.json", tmp_path / "v2.html"
    first = _invoke(str(cases), f"{SCRIPT}:write", "--save", str(before), "-n", "3")
    assert first.exit_code == 0, first.output
    second = _invoke(str(cases), f"{SCRIPT}:write_all", "-n", "3", "--compare", str(before),
                     "--html", str(page), "--cases")  # fmt: skip
    assert second.exit_code == 0, second.output  # 5 of 10 better is not significant
    output = second.output
    assert "  case-6   equals ✗✗✗ -> ✔✔✔" in output  # tea, changed cases listed
    assert "p = 0.0625. That is not below 0.05" in " ".join(output.split())
    text = visible_text(page.read_text())
    assert "Compared with taglines: write" in text
    assert 'case-6 product: "tea" ✗✗✗ → ✔✔✔ better' in text  # its inputs beside it
    assert 'case-1 product: "coffee" ✔✔✔ → ✔✔✔' in text  # unchanged cases too
    words = (
        "5 cases improved, 0 regressed and 5 did not change. The sign test looks only at the "
        "5 that changed"
    )
    assert words in text
    assert "p = 0.0625. That is not below 0.05, so the change is not significant" in text
    assert "6 changed cases would be needed to reach p < 0.05 (here 5 changed)" in text
    # every case with its inputs, expected, output and each verdict's reason, visible
    assert re.search(r"case-6 .*tea.* Smart tea\. #1 Smart tea\. ✔ pass", text)
    again = EvalReport.load(before)
    again.write_html(tmp_path / "v1.html")
    text = visible_text((tmp_path / "v1.html").read_text())
    assert "✗ fail expected 'Smart tea.', got 'rejected'" in text  # the reason, not a tooltip
    assert 'title="' not in (tmp_path / "v1.html").read_text()


def test_the_page_escapes_what_cases_and_outputs_hold(tmp_path) -> None:
    hostile = "<script>alert(1)</script>"

    @agentic_function
    def echo_back(text: str) -> str:
        return f'<img src=x onerror="alert(2)">{text}'

    dataset = Dataset(cases=[Case(inputs={"text": hostile}, expected=hostile, name=hostile)])
    report = dataset.evaluate(echo_back, [equals])
    page = report.write_html(tmp_path / "r.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert report.to_html().count("&lt;script&gt;") >= 3  # the notebook's fragment too


@pytest.mark.browser
def test_the_compared_page_paints_in_chromium_with_its_comparison(tmp_path, chromium) -> None:  # noqa: F811
    products = [*COFFEES, *OTHERS]
    dataset = Dataset(name="taglines", cases=[
        Case(inputs={"product": p}, expected=f"Smart {p}.", name=p) for p in products])  # fmt: skip
    v1 = dataset.evaluate(write, [equals], model=ScriptedModel(reply), repeat=3, name="v1")
    v2 = dataset.evaluate(write, [equals], repeat=3, name="v2", model=ScriptedModel(
        lambda request: "approve" if request.function == "review" else reply(request)))  # fmt: skip
    page = v2.write_html(tmp_path / "v2.html", baseline=v1)
    shot = Path(os.environ.get("OPENPROGRAM_EVAL_SHOT", tmp_path / "v2.png"))
    chromium("--window-size=1300,1600", f"--screenshot={shot}", page.as_uri())
    dom = chromium("--dump-dom", page.as_uri())
    text = visible_text(dom)
    assert "Compared with v1" in text and "tea" in text and "✗✗✗ → ✔✔✔ better" in text
    assert "That is not below 0.05, so the change is not significant" in text
    from PIL import Image as PILImage

    image = PILImage.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 16) or []
    greens = sum(count for count, (r, g, b) in colours if g > r + 20 and g > b + 10)
    assert greens > 5_000  # the improved cells are painted green


def test_eval_takes_api_base_and_api_key_env_for_the_runs_and_the_judge(tmp_path) -> None:
    def respond(body: dict) -> str:
        text = str(body["messages"])
        if "You grade one output" in text:
            passed = "Smart" in text.split("<output>", 1)[1]
            return json.dumps({"passed": passed, "reason": "judged offline"})
        if "Approve or reject" in text:
            return "approve"
        return "Smart " + text.split("for ")[1].split(".")[0] + "."

    cases = Dataset(cases=[Case(inputs={"product": "tea"}, expected="Smart tea.", name="tea")])
    path = cases.save(tmp_path / "c.json")
    key = "gw-" + os.urandom(8).hex()
    with OpenAIServer(respond) as server:
        result = _invoke(
            str(path), "tests.openprogram.evals.agents:write", "--model", "openai/local",
            "--api-base", server.url, "--api-key-env", "EVAL_GATEWAY_KEY",
            "-s", "equals", "-s", "llm_judge:Is it a tagline?", "--cases",
            env={"EVAL_GATEWAY_KEY": key},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert "✔ llm_judge: judged offline" in result.output
        assert "model openai/local" in result.output
        assert len(server.requests) == 3  # the draft, its review, the judge
        assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {key}"}
        assert key not in result.output
        missing = _invoke(str(path), "tests.openprogram.evals.agents:write",
                          "--model", "openai/local", "--api-base", server.url,
                          "--api-key-env", "NO_SUCH_KEY_VARIABLE")  # fmt: skip
        assert missing.exit_code == 1
        assert "--api-key-env NO_SUCH_KEY_VARIABLE: that environment variable is not set" in (
            missing.output
        )
        assert len(server.requests) == 3
