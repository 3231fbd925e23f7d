"""A generated report opened in headless Chromium: it paints, and its script builds the
tree and the panels of an llm call exactly as the Python side explains them."""

from __future__ import annotations

import html
import shutil
import subprocess
from pathlib import Path

import pytest
from PIL import Image as PILImage

from openprogram.display import CallView, write_report
from openprogram.display.calls import label
from tests.support.chromium import CHROMIUM_FLAGS

pytestmark = pytest.mark.browser


@pytest.fixture
def chromium(tmp_path: Path):
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        pytest.skip("needs Chromium: apt-get install chromium (scripts/setup.sh --dev does)")
    runs = iter(range(1000))

    def run(*arguments: str) -> str:
        profile = tmp_path / f"profile-{next(runs)}"  # a fresh profile per run
        result = subprocess.run(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *arguments],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr[-2000:]
        return result.stdout

    return run


def rendered_names(dom: str) -> set[str]:
    """`name #k` of every row the script built (the static fallback has no carets)."""
    import re

    return set(
        re.findall(
            r'data-a="tog">[▸▾]?</span><span[^>]*></span><span class="opv-name">'
            r'([\w]+) <span class="opv-k">(#\d+)</span>',
            dom,
        )
    )


def test_report_paints_a_non_blank_page_with_the_call_tree(tagline_session, tmp_path, chromium):
    report = write_report(tagline_session, tmp_path / "run.html")
    screenshot = tmp_path / "shot.png"

    chromium("--window-size=1280,900", f"--screenshot={screenshot}", report.as_uri())
    dom = chromium("--dump-dom", report.as_uri())

    image = PILImage.open(screenshot).convert("RGB")
    assert image.size == (1280, 900)
    colours = image.getcolors(maxcolors=1 << 16) or []
    assert len(colours) > 50  # text, status dots and borders, not a blank page
    dark = sum(count for count, rgb in colours if sum(rgb) < 200)
    assert dark > 500
    assert {
        ("user", "#1"),
        ("write_tagline", "#1"),
        ("look", "#1"),
        ("look", "#3"),
    } <= rendered_names(dom)
    assert 'class="opv-static" hidden=""' in dom  # the script replaced the fallback


def test_a_deep_link_opens_an_llm_call_with_the_messages_it_saw(
    tagline_session, tmp_path, chromium
):
    dag = tagline_session.dag
    redraft = dag.find(name="write_tagline", kind="llm")[1]
    report = write_report(tagline_session, tmp_path / "run.html")

    dom = chromium("--dump-dom", f"{report.as_uri()}#n={redraft.id}")

    assert ("review", "#1") in rendered_names(dom)  # the path to the node was expanded
    view = CallView(dag, redraft)
    for line in view.rendered.text().splitlines():
        if not line.startswith("assistant: "):
            assert html.escape(line, quote=False) in dom
    assert "this call's content" in dom and "Shorter, please." in dom


def test_the_hidden_panel_gives_the_same_rules_as_python(rules_session, tmp_path, chromium):
    dag = rules_session.dag
    decide = dag.find(name="decide", kind="llm")[0]
    report = write_report(rules_session, tmp_path / "rules.html")

    dom = chromium("--dump-dom", f"{report.as_uri()}#n={decide.id}&t=hid")

    groups = CallView(dag, decide).hidden_groups()
    assert groups
    for group in groups:
        assert f"<b>{html.escape(group.rule, quote=False)}</b>" in dom
        for node in (group.frames or group.nodes)[:12]:
            assert f">{html.escape(label(dag, node), quote=False)}</span>" in dom


def test_hidden_calls_of_one_function_are_one_group(tmp_path, chromium):
    from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm

    @agentic_function
    def step(n: int) -> str:
        return llm(f"step {n}")

    @agentic_function
    def loop() -> None:
        for n in range(20):
            step(n)

    with Session() as session, Runtime(ScriptedModel(lambda r: "ok")):
        loop()
    last = session.dag.find(name="step", kind="llm")[-1]
    report = write_report(session, tmp_path / "loop.html")

    dom = chromium("--dump-dom", f"{report.as_uri()}#n={last.id}&t=hid")

    (group,) = CallView(session.dag, last).hidden_groups()
    assert group.rule == "inside step (expose='io')" and len(group.frames) == 19
    assert "<b>inside step (expose='io')</b>" in dom and "(19 nodes in 19 calls)" in dom
    assert "and 7 more" in dom


def test_the_diff_panel_compares_with_the_previous_call(tagline_session, tmp_path, chromium):
    dag = tagline_session.dag
    redraft = dag.find(name="write_tagline", kind="llm")[1]
    report = write_report(tagline_session, tmp_path / "run.html")

    dom = chromium("--dump-dom", f"{report.as_uri()}#n={redraft.id}&t=diff")

    assert "compared with write_tagline #1 (llm)" in dom
    added = [line.text for line in CallView(dag, redraft).diff if line.op == "+"]
    for text in added:
        assert f'<div class="opv-add">+ {html.escape(text, quote=False)}</div>' in dom


def test_a_screenshot_opens_at_full_size_with_the_other_images_of_its_step(tmp_path, chromium):
    from openprogram import Runtime, ScriptedModel, Session, agentic_function, llm

    from .conftest import screen

    raw, marked = screen("red", (1280, 800)), screen("green", (1280, 800))

    @agentic_function
    def observe() -> dict:
        return {"screenshot": raw}

    @agentic_function
    def plan() -> str:
        return llm(["Which button?", marked])

    @agentic_function
    def step() -> str:
        observe()
        return plan()

    with Session() as session, Runtime(ScriptedModel(["click 1"])):
        step()
    dag = session.dag
    (seen,) = dag.find(name="observe")
    report = write_report(session, tmp_path / "step.html", thumbnail_px=200)
    sha = dag.jsonable(raw).sha256

    dom = chromium("--dump-dom", f"{report.as_uri()}#n={seen.id}&i={sha}")

    full = dag.image(sha).data_url()
    assert f'<img src="{full}"' in dom  # the lightbox shows the stored image itself
    assert '<div class="opv-lb" tabindex="-1">' in dom  # open (a closed one is hidden)
    assert "<span>1 / 2</span>" in dom and "<b>observe #1</b>" in dom
    # the marked image the model saw is one step away; nothing before the raw screen
    assert '<button data-a="lb-next">▶</button>' in dom
    assert '<button data-a="lb-prev" disabled="">◀</button>' in dom
    assert 'style="width:200px"' in dom  # thumbnails at the size asked for


# Clicks through the built page as a reader would, synchronously while it loads: every
# llm call's "hidden from it" tab and each of its rules' "each node and why" lists, then
# writes what the page showed into <pre id="shown">.
_READ_THE_PAGE = """<script>
(() => {
  const root = document.querySelector(".opv");
  const rows = JSON.parse(document.getElementById(root.id + "-data").textContent).nodes;
  root.querySelector('[data-a="expand"]').click();
  const shown = {};
  rows.forEach((row, i) => {
    if (row[1] !== "l") return;
    const node = root.querySelector(`.opv-node[data-i="${i}"]`);
    node.querySelector(":scope>.opv-row").click();
    node.querySelector(':scope>.opv-detail [data-t="hid"]').click();
    const panel = node.querySelector(":scope>.opv-detail .opv-panel");
    panel.querySelectorAll('summary[data-a="all"]').forEach(s => s.click());
    shown[i] = [...panel.querySelectorAll(".opv-all .opv-chip")].map(
      c => [+c.dataset.i, c.title]);
  });
  const out = document.createElement("pre");
  out.id = "shown";
  out.textContent = JSON.stringify(shown);
  document.body.appendChild(out);
})();
</script></body>"""


def test_the_page_marks_hidden_exactly_what_hidden_nodes_gives(
    every_rule_session, tmp_path, chromium
):
    import json
    import re

    from openprogram.display import hidden_nodes

    dag = every_rule_session.dag
    report = write_report(every_rule_session, tmp_path / "rules.html")
    page = report.read_text("utf-8").replace("</body>", _READ_THE_PAGE, 1)
    report.write_text(page, "utf-8")

    dom = chromium("--dump-dom", report.as_uri())

    found = re.search(r'<pre id="shown">(.*?)</pre>', dom, re.S)
    assert found, "the page script did not finish"
    shown = {int(k): v for k, v in json.loads(html.unescape(found.group(1))).items()}
    row = {node.id: i for i, node in enumerate(dag.nodes)}
    expected = {
        row[call.id]: sorted([row[h.node.id], h.reason] for h in hidden_nodes(dag, call))
        for call in dag.find(kind="llm")
    }
    assert {call: sorted(chips) for call, chips in shown.items()} == expected
    assert sum(map(len, expected.values())) > 100  # a page with plenty to get wrong
