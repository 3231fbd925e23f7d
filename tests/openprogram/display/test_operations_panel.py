"""The report's operations panel (display/operations.py) from records and events as a
store holds them: who asked to stop, who settled, heartbeats on one line, escaping."""

from __future__ import annotations

from openprogram.display.operations import collapsed, operations_html
from openprogram.operations.operation import OperationRecord
from openprogram.store._operations import OperationEvent


def _record(**changes: object) -> OperationRecord:
    fields: dict[str, object] = dict(
        id="op-1", node="n1", kind="report.build", version=2, effect="idempotent",
        args={"month": "May"}, background=True, state="cancelled", result=None,
        error="cancelled: asked to stop", attempts=1, created_at=100.0, updated_at=104.0,
        heartbeat_at=103.0,
    )  # fmt: skip
    fields.update(changes)
    return OperationRecord(**fields)  # type: ignore[arg-type]


def test_the_panel_shows_states_over_time_who_cancelled_and_who_settled():
    cancelled = _record()
    settled = _record(id="op-2", effect="once", state="done", result="ch_1", error=None)
    events = {
        "op-1": [
            OperationEvent("op-1", 100.0, "pending", None),
            OperationEvent("op-1", 100.5, "running", None),
            *(OperationEvent("op-1", 101.0 + i, "running", "step 3") for i in range(3)),
            OperationEvent("op-1", 103.5, "running", "cancel requested by bob@host pid 7"),
            OperationEvent("op-1", 104.0, "cancelled", None),
        ],
        "op-2": [
            OperationEvent("op-2", 100.0, "pending", None),
            OperationEvent("op-2", 100.1, "running", None),
            OperationEvent("op-2", 101.0, "unknown", "its process died while it ran"),
            OperationEvent("op-2", 160.0, "done", "settled by alice: done with the result given"),
        ],
    }
    page = operations_html([cancelled, settled], events, {"n1": "start_report #1"})
    assert "Operations (2)" in page and "1 cancelled · 1 done" in page
    assert "report.build v2" in page and "effect=once" in page and "attempts 1" in page
    assert (
        "from tool call start_report #1" in page and "&#34;month&#34;: &#34;May&#34;" in page
    )  # escaped
    assert "cancel requested by bob@host pid 7 at 1970-01-01 00:01:43.500 UTC" in page
    assert "settled by alice: done with the result given at 1970-01-01 00:02:40.000 UTC" in page
    assert "(now done)" in page and "result <code>ch_1</code>" in page
    assert 'running<span class="opo-m"> for 2.5 s (3 heartbeats)</span>' in page
    assert 'unknown<span class="opo-m"> for 59.0 s</span>' in page
    assert [(e.state, n) for e, n, _ in collapsed(events["op-1"])] == [
        ("pending", 1), ("running", 1), ("running", 3), ("running", 1), ("cancelled", 1)
    ]  # fmt: skip


def test_the_panel_escapes_what_it_shows_and_is_empty_without_operations():
    hostile = _record(args={"x": "<script>alert(1)</script>"}, error="<b>boom</b>")
    page = operations_html([hostile], {"op-1": [OperationEvent("op-1", 1.0, "failed", "<i>")]})
    assert "<script>alert" not in page and "&lt;script&gt;" in page
    assert "<b>boom" not in page and "<i>" not in page
    assert operations_html([], {}) == ""
