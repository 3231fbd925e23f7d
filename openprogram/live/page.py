"""The HTML of `openprogram sessions serve`: the list of a store's sessions and runs, a
session's page (display.html's DAG view, with a script that follows the session's event
stream: each event shows at once in the feed, and the view is fetched again, at most
one fetch at a time) and error pages. Everything shown is escaped. Start at
session_page.
"""

from __future__ import annotations

import html
import json
import time
from typing import Any
from urllib.parse import quote

__all__ = ["LISTED", "error_page", "listing", "session_page"]

LISTED = 200
"""The most recent sessions the list shows."""

_HEAD = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>{title}</title>
<style>body{{margin:0;padding:16px 20px;background:#f6f8fa;font:14px system-ui,sans-serif}}
main{{max-width:1400px;margin:0 auto}} table{{border-collapse:collapse;background:#fff;width:100%}}
td,th{{border:1px solid #d0d7de;padding:4px 8px;text-align:left}} th{{background:#eef1f4}}
.op-live{{background:#fff;border:1px solid #d0d7de;border-radius:8px;padding:8px 12px;
margin:0 0 12px}} .op-live ol{{margin:4px 0;max-height:9em;overflow:auto;font:12px monospace}}
.op-state{{font-weight:600}} .op-on{{color:#1a7f37}} .op-off{{color:#9a6700}}</style>
</head><body><main>
"""
_TAIL = "</main></body></html>\n"


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


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
        link = f"/session/{quote(info.id, safe='')}?token={quote(token)}"
        started = run.started_at if run is not None and run.started_at else info.created_at
        rows.append(
            f'<tr data-session="{_e(info.id)}"><td><a href="{_e(link)}">{_e(info.id)}</a></td>'
            f'<td class="op-state">{_e(_state(statuses.get(info.id, {}), run))}</td>'
            f"<td>{_e(run.function) if run is not None else ''}</td>"
            f"<td>{_e(_when(started))}</td>"
            f"<td>{_e(_when(run.ended_at) if run is not None else '')}</td>"
            f"<td>{info.nodes:,}</td></tr>"
        )
    more = f"<p>the {LISTED} newest of {len(infos):,}</p>" if len(infos) > LISTED else ""
    body = (
        f"<h1>Sessions in {_e(mask_url(store_url))}</h1>{more}<table><tr><th>session</th>"
        "<th>state</th><th>run of</th><th>started</th><th>ended</th><th>nodes</th></tr>"
        + "".join(rows)
        + "</table>"
        + ("" if rows else "<p>no sessions yet: reload once something is recorded</p>")
    )
    return _HEAD.format(title="openprogram sessions") + body + _TAIL


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
    home = f"/?token={quote(token)}"
    body = (
        f'<p><a href="{_e(home)}">all sessions</a></p>'
        f'<div class="op-live"><span id="op-conn" class="op-off">connecting</span> · '
        f'<span id="op-count">0</span> events since this page loaded (after seq {last_seq})'
        f'<ol id="op-feed"></ol></div><div id="op-view">{view}</div>'
        f'<script type="application/json" id="op-config">{data}</script>{_SCRIPT}'
    )
    return _HEAD.format(title=_e(f"session {session_id}")) + body + _TAIL


def error_page(status: int, message: str) -> str:
    return _HEAD.format(title=f"{status}") + f"<h1>{status}</h1><p>{_e(message)}</p>" + _TAIL
