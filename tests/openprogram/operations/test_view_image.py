"""view_image: the model sees the pixels (a user message after the tool messages), and
history retention (max_images) drops the oldest, listed in the render's report."""

from __future__ import annotations

import base64
import io

import pytest
from PIL import Image as PILImage

from openprogram import Runtime, ScriptedModel, Session, llm
from openprogram.operations import view_image_tool
from openprogram.render.render import recorded_report
from openprogram.testing import OpenAIServer
from tests.openprogram.render.test_render_incremental import assert_same_as_from_scratch


@pytest.fixture
def pictures(tmp_path):
    folder = tmp_path / "pictures"
    folder.mkdir()
    for colour in ("red", "green", "blue"):
        PILImage.new("RGB", (4, 3), colour).save(folder / f"{colour}.png")
    return folder


def look(*paths):
    return {"tool_calls": [{"name": "view_image", "arguments": {"path": str(p)}} for p in paths]}


def _pixel(url: str) -> tuple[tuple[int, int], tuple[int, ...]]:
    assert url.startswith("data:image/png;base64,")
    picture = PILImage.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    return picture.size, picture.convert("RGB").getpixel((0, 0))


def test_the_server_receives_the_images_a_tool_returned(pictures):
    view_image = view_image_tool([pictures])
    with OpenAIServer([look(pictures / "red.png", pictures / "blue.png"), "red, blue"]) as server:
        runtime = Runtime("openai/local", api_base=server.url, api_key="test")
        with Session(), runtime:
            assert llm("What colours?", tools=[view_image]) == "red, blue"
        sent = server.requests[1].body["messages"]
    roles = [m["role"] for m in sent]
    assert roles == ["user", "assistant", "tool", "tool", "user"]  # tool messages first
    assert all("<image sha256:" in m["content"] for m in sent[2:4])
    parts = sent[4]["content"]
    assert [p["type"] for p in parts] == ["text", "image_url", "text", "image_url"]
    assert "view_image (tool call" in parts[0]["text"]
    assert _pixel(parts[1]["image_url"]["url"]) == ((4, 3), (255, 0, 0))
    assert _pixel(parts[3]["image_url"]["url"]) == ((4, 3), (0, 0, 255))


def test_max_images_keeps_the_newest_tool_images_and_reports_the_dropped(pictures):
    view_image = view_image_tool([pictures])
    model = ScriptedModel([
        look(pictures / "red.png"), look(pictures / "green.png"), look(pictures / "blue.png"),
        "seen",
    ])  # fmt: skip
    with Session() as session, Runtime(model, max_images=1):
        llm("Look at each", tools=[view_image])
    last = model.requests[-1]
    urls = [
        p["image_url"]["url"]
        for m in last.messages
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "image_url"
    ]
    assert [_pixel(url)[1] for url in urls] == [(0, 0, 255)]  # only the newest: blue
    red, green, _ = session.dag.find("view_image")
    omitted = [e for e in last.rendered.report if e["kind"] == "omitted"]
    assert sorted(e["node_id"] for e in omitted) == sorted([red.id, green.id])
    asked = [n for n in session.dag.nodes if n.kind == "llm"][-1]
    assert [e for e in recorded_report(session.dag, asked) if e["kind"] == "omitted"] == omitted
    for keep in (0, 1, 2, None):  # kept pieces render as a render from scratch does
        assert_same_as_from_scratch(session.dag, None, max_images=keep)
