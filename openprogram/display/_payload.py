"""The compact JSON a DAG view embeds: one row per node, images once, reads diff-encoded.

Owns the size budgets (longest values cut first; thumbnails up to a byte budget) and
stores an llm node's reads, and what was hidden from it and why (from _hiding), as a
change against the previous call of the same function. view.js reads it. Start at
build_payload().
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from itertools import accumulate
from typing import Any

from openprogram.agentic.questions import is_ask, pending, question
from openprogram.core.dag import ContextDAG, Node
from openprogram.core.image import ImageRef
from openprogram.core.values import shown_json
from openprogram.display._hiding import CallHiding
from openprogram.display._images import thumbnail_url
from openprogram.echo import elide
from openprogram.render.render import recorded_report

__all__ = [
    "DEFAULT_FULL_IMAGE_BUDGET",
    "DEFAULT_IMAGE_BUDGET",
    "DEFAULT_TEXT_BUDGET",
    "build_payload",
    "summary",
    "value_text",
]

DEFAULT_TEXT_BUDGET = 2_500_000
"""Characters of node values embedded in one view; beyond it the longest values are cut."""
DEFAULT_IMAGE_BUDGET = 1_500_000
"""Bytes of thumbnail data URLs embedded in one view; later images show as placeholders."""
DEFAULT_FULL_IMAGE_BUDGET = 40_000_000
"""Bytes of full-resolution images (PNG data URLs) embedded in one view, for the
lightbox; beyond it an image opens at thumbnail size with a note saying so."""
_MIN_CAP = 80
_IMAGE_MARK = "<image sha256:"  # how str(ImageRef) starts, so every image's text holds it
_MAX_CHARS = 20_000
_KIND = {"code": "c", "llm": "l", "user": "u"}
_STATUS = {
    "running": "r",
    "completed": "c",
    "error": "e",
    "cancelled": "x",
    "stopped": "s",
    "waiting": "w",
    "unknown": "u",
}
_EXPOSE = {"io": "i", "llm": "l", "full": "f", "hidden": "h"}


def _json(value: Any) -> str:
    return shown_json(value, _dumps)


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def value_text(node: Node) -> tuple[str, str]:
    """(input, output) of a node as the render's line format writes them, uncut.

    Code input leaves out `hidden` parameters; code output is empty unless completed.
    llm input is its content's text parts, with images as `<image sha256:…>`; llm output
    is the reply (kept on a failed structured-output check). Errors are in node.error.
    """
    if node.kind == "llm":
        text = _parts_text(node.input)
        out = "" if node.output is None else str(node.output)
        calls = (node.meta or {}).get("tool_calls")
        if calls:
            asked = ", ".join(f"{c.get('name')}({_json(c.get('arguments'))})" for c in calls)
            out = f"{out} [calls {asked}]" if out else f"[calls {asked}]"
    elif node.kind == "user":
        text = "" if node.input is None else str(node.input)
        out = ""
    else:
        shown = node.input
        if node.hidden_inputs and isinstance(shown, dict):
            shown = {k: v for k, v in shown.items() if k not in node.hidden_inputs}
        text = _json(shown)
        out = _json(node.output) if node.status == "completed" else ""
    return text, out


def _parts_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    lines = []
    for part in content:
        if isinstance(part, Mapping) and part.get("type") == "text":
            lines.append(str(part.get("text", "")))
        elif isinstance(part, Mapping) and part.get("type") == "image":
            lines.append(str(_ref(part.get("image")) or "<image>"))
        else:
            lines.append(str(part))
    return "\n".join(lines)


def _ref(value: Any) -> ImageRef | None:
    if isinstance(value, ImageRef):
        return value
    if isinstance(value, Mapping) and value.get("$image") and "width" in value:
        return ImageRef(sha256=value["$image"], width=value["width"], height=value["height"])
    return None


def image_refs(value: object, found: list[ImageRef]) -> list[ImageRef]:
    """Every image reference inside a node value, in order (repeats included)."""
    ref = _ref(value)
    if ref is not None:
        found.append(ref)
    elif isinstance(value, Mapping):
        for item in value.values():
            image_refs(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            image_refs(item, found)
    return found


def _cap(lengths: Iterable[int], budget: int) -> int | None:
    """The largest per-value length keeping the total within budget (None: no cut)."""
    ordered = sorted(lengths)
    total = sum(ordered)
    if total <= budget:
        return None
    prefix = [0, *accumulate(ordered)]
    count = len(ordered)
    low, high = _MIN_CAP, ordered[-1]
    while low < high:  # largest cap with sum(min(len, cap)) <= budget
        middle = (low + high + 1) // 2
        index = _bisect(ordered, middle)
        if prefix[index] + (count - index) * middle <= budget:
            low = middle
        else:
            high = middle - 1
    return low


def _bisect(ordered: list[int], value: int) -> int:
    import bisect

    return bisect.bisect_right(ordered, value)


def _cut(text: str, cap: int | None) -> str:
    limit = min(cap or _MAX_CHARS, _MAX_CHARS)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [+{len(text) - limit} chars]"


def summary(dag: ContextDAG, nodes: list[Node] | None = None) -> dict[str, Any]:
    """Totals of a DAG (or of `nodes`): counts, duration, tokens, cost."""
    nodes = dag.nodes if nodes is None else nodes
    kinds = {"code": 0, "llm": 0, "user": 0}
    statuses = dict.fromkeys(_STATUS, 0)
    tokens_in = tokens_out = unpriced = 0
    cost = 0.0
    start = end = None
    down = _down(nodes)
    for node in nodes:
        kinds[node.kind] = kinds.get(node.kind, 0) + 1
        statuses[node.status] = statuses.get(node.status, 0) + 1
        if node.usage is not None:
            tokens_in += node.usage.input_tokens
            tokens_out += node.usage.output_tokens
            cost += node.usage.cost_usd
            unpriced += node.usage.unpriced_calls
        if node.started_at:
            start = node.started_at if start is None else min(start, node.started_at)
        stop = node.ended_at or node.started_at
        if stop:
            end = stop if end is None else max(end, stop)
    return {
        "nodes": len(nodes),
        "kinds": kinds,
        "statuses": statuses,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": cost,
        "unpriced_calls": unpriced,
        "duration_s": max(0.0, end - start - down)
        if start is not None and end is not None
        else 0.0,
        "down_s": down,
    }


def _down(nodes: list[Node]) -> float:
    """Seconds no process ran the outermost of `nodes` (resumed calls' down_s): the
    union of each one's downtime, ending at its last resume, so that two calls taken up
    by one resume count it once."""
    ids = {node.id for node in nodes}
    spans = []
    for node in nodes:
        at = node.meta.get("resumed_at")
        if node.parent not in ids and node.down_s and isinstance(at, (int, float)):
            spans.append((float(at) - node.down_s, float(at)))
    total, reach = 0.0, float("-inf")
    for begin, stop in sorted(spans):
        if stop > reach:
            total += stop - max(begin, reach)
            reach = stop
    return total


def build_payload(
    dag: ContextDAG,
    *,
    focus: str | None = None,
    title: str | None = None,
    facts: Mapping[str, Any] | None = None,
    text_budget: int = DEFAULT_TEXT_BUDGET,
    image_budget: int = DEFAULT_IMAGE_BUDGET,
    thumbnail_px: int = 256,
    full_image_budget: int = DEFAULT_FULL_IMAGE_BUDGET,
) -> dict[str, Any]:
    """The JSON-able payload of a DAG view (see _script.py for how it is read).

    Each image is embedded once: a thumbnail fitting `thumbnail_px` and, within
    `full_image_budget` bytes, the image itself at full resolution.
    """
    nodes = dag.nodes
    index = {node.id: i for i, node in enumerate(nodes)}
    texts = [value_text(node) for node in nodes]
    cap = _cap((len(t) for pair in texts for t in pair), text_budget)
    origin = min((n.started_at for n in nodes if n.started_at), default=0.0)

    names: dict[str, int] = {}
    images: list[list[Any]] = []
    image_index: dict[str, int] = {}
    image_bytes = full_bytes = 0
    previous_llm: dict[str, int] = {}
    full_reads: dict[int, list[int]] = {}
    hiding = CallHiding(dag)
    rows: list[list[Any]] = []
    rules: dict[str, int] = {}
    codes: dict[str, int] = {}
    for i, node in enumerate(nodes):
        name = names.setdefault(node.name, len(names))
        refs: list[ImageRef] = []
        if _IMAGE_MARK in texts[i][0]:  # skips walking the values of the many image-less nodes
            image_refs(node.input, refs)
        if _IMAGE_MARK in texts[i][1] and node.status == "completed":
            image_refs(node.output, refs)
        pictures: list[int] = []
        for ref in refs:
            slot = image_index.get(ref.sha256)
            if slot is None:
                slot = image_index[ref.sha256] = len(images)
                url = full = None
                image = dag.blobs.get(ref.sha256)
                if image is not None and image_bytes < image_budget:
                    url = thumbnail_url(image, thumbnail_px)
                    image_bytes += len(url)
                if image is not None and full_bytes < full_image_budget:
                    full = image.data_url()
                    if full_bytes + len(full) > full_image_budget:
                        full = None
                    else:
                        full_bytes += len(full)
                images.append([ref.sha256[:12], ref.width, ref.height, url, full])
            if slot not in pictures:
                pictures.append(slot)
        reads: Any = 0
        hidden: Any = 0
        extra = _extra(dag, node, index)
        if node.kind == "llm":
            current = [index[r] for r in node.reads if r in index]
            base = previous_llm.get(node.name, -1)
            reads = _encode_reads(current, full_reads.get(base))
            if reads and reads[0] == 0:
                reads[0] = base
            full_reads[i] = current
            previous_llm[node.name] = i
            hidden = _encode_hidden(base, *hiding.changes[i])
        usage = node.usage
        rows.append(
            [
                node.id,
                _KIND[node.kind],
                name,
                index.get(node.parent, -1) if node.parent is not None else -1,
                _STATUS.get(node.status, "r"),
                node.seq,
                node.end_seq if node.end_seq is not None and node.status != "running" else -1,
                round((node.started_at - origin) * 1000, 1) if node.started_at else -1,
                round(node.duration_s * 1000, 1) if node.duration_s is not None else -1,
                [
                    usage.input_tokens,
                    usage.output_tokens,
                    round(usage.cost_usd, 8),
                    usage.cost_known,
                ]
                if usage is not None
                else 0,
                _EXPOSE.get(node.expose, "i"),
                _cut(texts[i][0], cap),
                _cut(texts[i][1], cap),
                pictures or 0,
                reads,
                extra or 0,
                hidden,
            ]
        )
    return {
        "v": 1,
        "title": title,
        "facts": [[str(k), _fact(v)] for k, v in (facts or {}).items()],
        "questions": [
            [q.id, elide(q.text, 2_000), _cut(q.expects(), 2_000), index.get(q.node_id, -1)]
            for q in pending(dag)
        ],
        "summary": summary(dag, _subtree(dag, focus) if focus is not None else nodes),
        "names": list(names),
        "nodes": rows,
        "images": images,
        "reasons": [
            [codes.setdefault(code, len(codes)), rules.setdefault(text, len(rules)), named]
            for code, text, named in hiding.reasons
        ],
        "codes": list(codes),
        "rules": list(rules),
        "focus": index.get(focus, -1) if focus is not None else -1,
        "cap": cap,
        "tpx": thumbnail_px,
        "created": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def _subtree(dag: ContextDAG, root: str) -> list[Node]:
    found, stack = [], [dag.node(root)]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(dag.children(node.id))
    return found


def _fact(value: Any) -> str:
    return value if isinstance(value, str) else _json(value)


def _encode_reads(current: list[int], before: list[int] | None) -> Any:
    """`[base, removed, added]`: reads as a change against the base row's reads, or
    `[-1, [], reads]` when that is not shorter. The caller fills in `base`."""
    if not current:
        return 0
    if before is None:
        return [-1, [], current]
    kept = set(current)
    removed = [r for r in before if r not in kept]
    had = set(before)
    added = [r for r in current if r not in had]
    if len(removed) + len(added) >= len(current):
        return [-1, [], current]
    return [0, removed, added]


def _encode_hidden(
    previous: int, base: int, removed: list[int], added: list[tuple[int, int]]
) -> list[Any]:
    """`[previous, removed, added]`: what was hidden from an llm call, and why. `previous`
    is the row of the previous call of the same function (-1: none). `removed` is 0 when
    `added` lists every hidden row; else the hidden rows are the previous call's, less
    the runs of rows in `removed` (`[start, count, …]`), with `added` set on top. `added`
    is runs `[start, count, reason, …]` (reason: an index of the payload's "reasons")."""
    assert base in (-1, previous), (base, previous)  # changes are against the previous call
    gone: list[int] = []
    for row in removed:
        if gone and gone[-2] + gone[-1] == row:
            gone[-1] += 1
        else:
            gone += [row, 1]
    runs: list[int] = []
    for row, reason in added:
        if runs and runs[-3] + runs[-2] == row and runs[-1] == reason:
            runs[-2] += 1
        else:
            runs += [row, 1, reason]
    return [previous, gone if base >= 0 else 0, runs]


def _extra(dag: ContextDAG, node: Node, index: dict[str, int]) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    if node.error or node.status in ("error", "cancelled", "stopped"):
        extra["err"] = _cut(node.error or node.status, _MAX_CHARS)
    if node.kind == "code" and node.render_range is not None:
        extra["rr"] = [node.render_range.callers, node.render_range.subcalls]
    if node.hidden_inputs:
        extra["hid"] = list(node.hidden_inputs)
    if node.system:
        extra["sys"] = _cut(node.system, _MAX_CHARS)
    if node.branch != "main":
        extra["br"] = node.branch
    meta = node.meta or {}
    for key, short in (
        ("model", "model"),
        ("stop_reason", "stop"),
        ("input_id", "iid"),
        ("tool_call_id", "tc"),
        ("effect", "eff"),
        ("key", "key"),
        ("settled", "set"),
    ):
        if meta.get(key) is not None:
            extra[short] = str(meta[key])
    if meta.get("report") or meta.get("report_base"):
        extra["rep"] = [
            [str(e.get("kind")), str(e.get("reason")), index.get(e.get("node_id") or "", -1)]
            for e in recorded_report(dag, node)
        ]
    if is_ask(node):
        asked = question(node)
        # a question loses its middle, never its end (where an approval's last argument is)
        extra["ask"] = [elide(asked.text, 2_000), _cut(asked.expects(), 2_000)]
    if meta.get("attempts"):
        extra["att"] = [str(a) for a in meta["attempts"]]
    return extra
