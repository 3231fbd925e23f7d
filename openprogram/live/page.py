"""The HTML of `openprogram sessions serve`: the list of a store's sessions and runs, a
session's page (display.html's DAG view, with a script that follows the session's event
stream: each event shows at once in the feed, and the view is fetched again, at most
one fetch at a time) and error pages, rendered through pages (templates/live.html.j2):
everything shown is escaped. Start at session_page.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote

from openprogram.pages import render, trusted

__all__ = ["LISTED", "error_page", "listing", "session_page"]

LISTED = 200
"""The most recent sessions the list shows."""


def _when(stamp: float | None) -> str:
    return "" if stamp is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(stamp))


def _state(statuses: dict[str, int], run: Any) -> str:
    """queued, running, waiting or finished (and how) for a run; for another session
    what its calls' statuses say."""
    if run is not None:
        return str(run.state)
    if not statuses:
        return "empty"
    for status in ("running", "waiting", "unknown", "error"):
        if statuses.get(status):
            return status
    return "finished"


def listing(
    store_url: str,
    infos: list[Any],
    statuses: dict[str, dict[str, int]],
    runs: dict[str, Any],
    token: str,
) -> str:
    """The sessions of a store, newest first, each with its run's state when it is one."""
    from openprogram.echo import mask_url

    shown = list(reversed(infos[-LISTED:]))
    rows = []
    for info in shown:
        run = runs.get(info.id)
        started = run.started_at if run is not None and run.started_at else info.created_at
        rows.append(
            {
                "id": info.id,
                "link": f"/session/{quote(info.id, safe='')}?token={quote(token)}",
                "state": _state(statuses.get(info.id, {}), run),
                "function": run.function if run is not None else "",
                "started": _when(started),
                "ended": _when(run.ended_at) if run is not None else "",
                "nodes": f"{info.nodes:,}",
            }
        )
    return render(
        "live.html.j2",
        page="listing",
        title="openprogram sessions",
        kind="opl",
        no_referrer=True,
        store=mask_url(store_url),
        listed=LISTED,
        more=f"{len(infos):,}" if len(infos) > LISTED else "",
        rows=rows,
    )


# Follows /session/ID/events: each event goes into the feed at once; the view (display's
# DAG view) is fetched again and its script run, one fetch at a time, the last one after
# the last event. EventSource reconnects on its own, sending Last-Event-ID.
_SCRIPT = """<script>
(function () {
"use strict";
const C = JSON.parse(document.getElementById("op-config").textContent);
const feed = document.getElementById("op-feed"), state = document.getElementById("op-conn");
const view = document.getElementById("op-view");
let fetching = false, again = false;
function show(fragment) {
  view.innerHTML = fragment;
  for (const old of view.querySelectorAll("script:not([type])")) {
    const script = document.createElement("script");
    script.textContent = old.textContent;
    old.replaceWith(script);
  }
}
async function refresh() {
  if (fetching) { again = true; return; }
  fetching = true;
  try {
    const reply = await fetch(C.view, {cache: "no-store"});
    if (reply.ok) show(await reply.text());
  } finally {
    fetching = false;
    if (again) { again = false; refresh(); }
  }
}
const source = new EventSource(C.events);
source.addEventListener("open", () => { state.textContent = "live"; state.className = "op-on"; });
source.addEventListener("error", () => {
  state.textContent = "reconnecting"; state.className = "op-off";
});
source.addEventListener("node", ev => {
  const n = JSON.parse(ev.data);
  let item = feed.querySelector(`[data-node="${CSS.escape(n.id)}"]`);
  if (!item) {
    item = document.createElement("li");
    item.dataset.node = n.id;
    feed.prepend(item);
  }
  item.dataset.status = n.status;
  item.dataset.arrived = String(Date.now() / 1000);  // when it came (benchmarks/bench_live.py)
  item.textContent = `#${n.seq} ${n.kind} ${n.name} ${n.status}`;
  document.getElementById("op-count").textContent = String(++C.seen);
  refresh();
});
})();
</script>"""


def session_page(session_id: str, view: str, last_seq: int, token: str) -> str:
    """A session's page: its DAG view as of `last_seq`, followed live from there."""
    base = f"/session/{quote(session_id, safe='')}"
    config = {
        "view": f"{base}/view?token={quote(token)}",
        "events": f"{base}/events?since={last_seq}&token={quote(token)}",
        "seen": 0,
    }
    data = json.dumps(config).replace("<", "\\u003c")
    return render(
        "live.html.j2",
        page="session",
        title=f"session {session_id}",
        kind="opl",
        no_referrer=True,
        home=f"/?token={quote(token)}",
        last_seq=last_seq,
        view=trusted(view),
        config=trusted(data),
        script=trusted(_SCRIPT),
    )


def error_page(status: int, message: str) -> str:
    """A page saying what went wrong: the HTTP status and the message (escaped)."""
    return render(
        "live.html.j2",
        page="error",
        title=str(status),
        kind="opl",
        no_referrer=True,
        status=status,
        message=message,
    )
