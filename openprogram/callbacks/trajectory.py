"""TrajectorySaver: one folder per run with screenshots, actions, model exchanges, report.

Owns the on-disk layout (documented in docs/callbacks.md), atomic metadata writes,
image de-duplication by hash and the self-contained report.html. Screenshots are encoded
and written by a background writer, flushed at each run's end. Every path is built from
sanitised names and checked to stay inside the root. Start at on_run_start().
"""

from __future__ import annotations

import atexit
import base64
import binascii
import contextvars
import hashlib
import json
import logging
import os
import queue
import re
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from openprogram.callbacks._trajectory_report import render_report
from openprogram.callbacks.base import Callback, current_run
from openprogram.core import _context
from openprogram.core._secrets import scrub, scrub_json
from openprogram.core.dag import Node
from openprogram.core.image import Image, is_image
from openprogram.core.usage import Usage, frame_usage
from openprogram.core.values import (
    escape_surrogates,
    replace_surrogates,
    to_jsonable,
    with_image_dicts,
)
from openprogram.errors import UsageError
from openprogram.render.render import recorded_report

__all__ = ["TrajectorySaver"]

log = logging.getLogger("openprogram.callbacks")

FORMAT = "openprogram.trajectory/1"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DATA_URL = re.compile(r"data:image/([a-z0-9.+-]+);base64,(.*)", re.DOTALL | re.IGNORECASE)
_MARK = (230, 0, 60)


def safe_name(text: str, *, limit: int = 100) -> str:
    """`text` as a single, harmless path component: no separators, no leading dots."""
    name = _UNSAFE.sub("_", str(text)).lstrip(".")[:limit]
    return name or "_"


@dataclass
class _Trajectory:
    """What one run has written so far."""

    run: Node
    folder: Path
    session: str
    started: float = field(default_factory=time.time)
    step: int | None = None
    screenshot: Any = None
    steps: dict[int, dict[str, Any]] = field(default_factory=dict)
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    images: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def step_entry(self, step: int) -> dict[str, Any]:
        return self.steps.setdefault(step, {"step": step, "screenshots": [], "actions": []})


class TrajectorySaver(Callback):
    """Write each run's trajectory to `<dir>/<run-id>/` (layout in docs/callbacks.md).

    Saves `metadata.json` (status "running", then "completed", "failed", "stopped" or
    "waiting"; replaced atomically), per-step screenshots (`on_screenshot(image, step)`), a copy
    of the latest screenshot marking each pointer action (`on_action_start(action)`,
    coordinates in that screenshot's pixels), every model request and reply as JSON with
    images saved once by hash and referenced, and `report.html` at the end of the run.

    It records the request as it reaches it in the callback chain: list it after a
    PIIRedactor so that no unmasked personal data is written. Only calls inside a run (a
    top-level agentic function call) are saved. Write failures are logged and recorded
    on the run, never raised into it (unless strict=True).

    Screenshots and their annotated copies are encoded and written on a background
    thread, in order, so a step never waits for PNG compression; a run's end waits for
    its files, as do flush() and interpreter exit. strict=True writes them on the
    calling thread instead, so a failure raises there.
    """

    def __init__(self, dir: str | os.PathLike[str], *, strict: bool = False) -> None:
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.strict = strict
        self.folders: dict[str, Path] = {}
        self._root = self.dir.resolve()
        self._runs: dict[str, _Trajectory] = {}
        self._lock = threading.Lock()
        self._writer = _Writer()
        # pairs a request with its reply: both hooks run in the same context (task/thread)
        self._exchange: contextvars.ContextVar[tuple[_Trajectory, dict[str, Any]] | None] = (
            contextvars.ContextVar(f"openprogram_trajectory_{id(self)}", default=None)
        )

    def __repr__(self) -> str:
        return f"TrajectorySaver({str(self.dir)!r})"

    # -- paths ---------------------------------------------------------------------------
    def _inside(self, path: Path) -> Path:
        resolved = path.resolve()
        if not resolved.is_relative_to(self._root):
            raise UsageError(
                f"TrajectorySaver refused to write {str(path)!r}: it is outside {str(self.dir)!r}"
            )
        return resolved

    def _file(self, trajectory: _Trajectory, *parts: str) -> Path:
        path = self._inside(trajectory.folder.joinpath(*parts))
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def _new_folder(self, run: Node) -> Path:
        base = safe_name(run.id)
        with self._lock:
            for attempt in range(1, 1000):
                name = base if attempt == 1 else f"{base}-{attempt}"
                folder = self._inside(self._root / name)
                try:
                    folder.mkdir()
                except FileExistsError:
                    continue
                return folder
        raise UsageError(f"TrajectorySaver: no free folder name for run {run.id!r} in {self.dir}")

    def _trajectory(self, *, fallback: bool = True) -> _Trajectory | None:
        """The open trajectory of the calling context's run; else, with `fallback`, the
        newest open one (for hooks called from a thread outside the run's context)."""
        run = current_run()
        with self._lock:
            if run is not None and run.id in self._runs:
                return self._runs[run.id]
            return next(reversed(self._runs.values()), None) if fallback else None

    # -- run -----------------------------------------------------------------------------
    def on_run_start(self, run: Node) -> None:
        folder = self._new_folder(run)
        trajectory = _Trajectory(run=run, folder=folder, session=_context.current_session().id)
        with self._lock:
            self._runs[run.id] = trajectory
            self.folders[run.id] = folder
        self._write_metadata(trajectory, "running")

    def flush(self) -> None:
        """Wait until every screenshot handed to this saver so far is on disk."""
        self._writer.flush()

    def on_run_end(self, run: Node) -> None:
        self._writer.flush()
        with self._lock:
            trajectory = self._runs.pop(run.id, None)
        if trajectory is None:
            return
        meta = self._metadata(trajectory, run_status(run))
        data = _json_text(meta, indent=2).encode("utf-8")
        _write_atomic(self._file(trajectory, "metadata.json"), data)
        report = render_report(meta, trajectory.steps, trajectory.exchanges, trajectory.folder)
        report = replace_surrogates(scrub(report, patterns=False))
        _write_atomic(self._file(trajectory, "report.html"), report.encode("utf-8"))

    def _metadata(self, trajectory: _Trajectory, status: str) -> dict[str, Any]:
        run = trajectory.run
        dag = _context.current_session().dag
        usage = frame_usage(dag, run.id) if run.id in dag else Usage()
        ended = run.ended_at if status != "running" else None
        return {
            "format": FORMAT,
            "run_id": run.id,
            "name": run.name,
            "session": trajectory.session,
            "status": status,
            "started_at": _iso(run.started_at or trajectory.started),
            "ended_at": _iso(ended) if ended else None,
            "duration_s": (ended - run.started_at) if ended else None,
            "input": with_image_dicts(run.input),
            "output": with_image_dicts(run.output) if status != "running" else None,
            "error": run.error if status != "running" else None,
            "stop_reason": run.meta.get("stop_reason"),
            "steps": len(trajectory.steps),
            "actions": sum(len(s["actions"]) for s in trajectory.steps.values()),
            "llm_calls": len(trajectory.exchanges),
            "usage": usage.model_dump(),
            "callback_errors": list(run.meta.get("callback_errors", [])) + trajectory.errors,
        }

    def _write_metadata(self, trajectory: _Trajectory, status: str) -> None:
        data = _json_text(self._metadata(trajectory, status), indent=2)
        _write_atomic(self._file(trajectory, "metadata.json"), data.encode("utf-8"))

    # -- GUI steps -----------------------------------------------------------------------
    def on_screenshot(self, image: object, step: int) -> None:
        """Save `image` (PIL or openprogram.Image) as the screenshot of step `step`."""
        trajectory = self._trajectory()
        if trajectory is None:
            return
        number = _step_number(step)
        pil = _pil(image)
        with trajectory.lock:
            entry = trajectory.step_entry(number)
            suffix = f"-{len(entry['screenshots']) + 1}" if entry["screenshots"] else ""
            name = f"screenshots/step-{number:03d}{suffix}.png"
            trajectory.step, trajectory.screenshot = number, pil
            entry["screenshots"].append(name)
        path = self._file(trajectory, *name.split("/"))
        metadata = _json_text(self._metadata(trajectory, "running"), indent=2).encode("utf-8")
        self._later(trajectory, "on_screenshot", lambda: pil.save(path, format="PNG"))
        self._later(
            trajectory,
            "on_screenshot",
            lambda: _write_atomic(self._file(trajectory, "metadata.json"), metadata),
        )

    def on_action_start(self, action: object) -> None:
        """Record `action` and save a copy of the latest screenshot marking its point(s)."""
        trajectory = self._trajectory()
        if trajectory is None:
            return
        with trajectory.lock:
            step = trajectory.step if trajectory.step is not None else 0
            entry = trajectory.step_entry(step)
            record: dict[str, Any] = {
                "event": "start",
                "step": step,
                "index": len(entry["actions"]) + 1,
                "action": _action_json(action),
                "time": time.time(),
                "annotated": None,
            }
            entry["actions"].append(record)
            screenshot = trajectory.screenshot
        points = _points(action)
        if screenshot is not None and points:
            name = f"screenshots/step-{step:03d}-action-{record['index']}.png"
            path = self._file(trajectory, *name.split("/"))
            label = str(record["action"].get("type", ""))
            self._later(
                trajectory,
                "on_action_start",
                lambda: _annotate(screenshot, points, label).save(path, format="PNG"),
            )
            record["annotated"] = name
        self._append_action(trajectory, record)

    def on_action_end(self, action: object, error: object = None) -> None:
        """Record how `action` ended: `error` is None on success, else what went wrong."""
        trajectory = self._trajectory()
        if trajectory is None:
            return
        dumped = _action_json(action)
        with trajectory.lock:
            records = [r for s in trajectory.steps.values() for r in s["actions"]]
            pending = [r for r in records if "ok" not in r and r["action"] == dumped]
            record = pending[-1] if pending else None
            if record is not None:
                record["ok"] = error is None
                record["error"] = None if error is None else str(error)
        end = {"event": "end", "action": dumped, "ok": error is None, "time": time.time()}
        if error is not None:
            end["error"] = str(error)
        if record is not None:
            end.update(step=record["step"], index=record["index"])
        self._append_action(trajectory, end)

    def _append_action(self, trajectory: _Trajectory, record: dict[str, Any]) -> None:
        line = _json_text(record) + "\n"
        with trajectory.lock, self._file(trajectory, "actions.jsonl").open("a") as file:
            file.write(line)

    # -- model exchanges -----------------------------------------------------------------
    def on_llm_start(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Save the request (images replaced by file references); returns it unchanged."""
        self._exchange.set(None)
        trajectory = self._trajectory(fallback=False)
        if trajectory is None:
            return messages
        try:
            self._save_request(trajectory, messages)
        except Exception as exc:  # an observer in transformer's clothing: never fatal
            if self.strict:
                raise
            self._failed(trajectory, "on_llm_start", exc)
        return messages

    def _save_request(self, trajectory: _Trajectory, messages: list[dict[str, Any]]) -> None:
        frame_id = _context.frame_id()
        frame = _context.current_session().dag.get(frame_id)
        with trajectory.lock:
            index = len(trajectory.exchanges) + 1
            record: dict[str, Any] = {
                "index": index,
                "frame": frame.name if frame is not None else None,
                "frame_id": frame_id,
                "request": f"llm/{index:04d}-request.json",
                "reply": None,
                "node_id": None,
            }
            trajectory.exchanges.append(record)
        body = {
            "index": index,
            "frame": record["frame"],
            "frame_id": frame_id,
            "time": time.time(),
            "messages": [self._message_json(trajectory, m) for m in messages],
        }
        self._write_json(trajectory, record["request"], body)
        self._exchange.set((trajectory, record))

    def on_usage(self, node: Node, usage: Usage) -> None:
        current = self._exchange.get()
        if current is None:
            return
        trajectory, record = current
        self._exchange.set(None)
        record["node_id"] = node.id
        record["reply"] = f"llm/{record['index']:04d}-reply.json"
        record["usage"] = usage.model_dump()
        body = {
            "index": record["index"],
            "node_id": node.id,
            "frame": record["frame"],
            "model": node.meta.get("model"),
            "reply": node.output,
            "usage": record["usage"],
            "render_report": recorded_report(_context.current_session().dag, node),
        }
        self._write_json(trajectory, record["reply"], body)

    def _message_json(self, trajectory: _Trajectory, message: dict[str, Any]) -> dict[str, Any]:
        content = message.get("content")
        if not isinstance(content, list):
            return dict(message)
        parts = [self._part_json(trajectory, part) for part in content]
        return {**message, "content": parts}

    def _part_json(self, trajectory: _Trajectory, part: Any) -> Any:
        if not (isinstance(part, dict) and part.get("type") == "image_url"):
            return part
        target = part.get("image_url")
        url = target.get("url") if isinstance(target, Mapping) else target
        match = _DATA_URL.match(url) if isinstance(url, str) else None
        if match is None:
            return part
        try:
            data = base64.b64decode(match.group(2), validate=False)
        except (binascii.Error, ValueError):
            return {"type": "image", "image": None, "error": "undecodable data URL"}
        extension = {"jpeg": "jpg", "svg+xml": "svg"}.get(match.group(1).lower(), "png")
        name = f"images/{hashlib.sha256(data).hexdigest()[:20]}.{safe_name(extension)}"
        with trajectory.lock:
            new = name not in trajectory.images
            trajectory.images.add(name)
        if new:
            _write_atomic(self._file(trajectory, *name.split("/")), data)
        return {"type": "image", "image": name}

    def _write_json(self, trajectory: _Trajectory, name: str, body: Any) -> None:
        data = _json_text(to_jsonable(body, None), indent=2)
        _write_atomic(self._file(trajectory, *name.split("/")), data.encode("utf-8"))

    def _later(self, trajectory: _Trajectory, hook: str, write: Callable[[], object]) -> None:
        """Run `write` on the background writer (now, when strict), recording a failure."""
        if self.strict:
            write()
            return

        def job() -> None:
            try:
                write()
            except Exception as exc:  # the step that asked has moved on: record, never raise
                self._failed(trajectory, hook, exc)

        self._writer.submit(job)

    def _failed(self, trajectory: _Trajectory, hook: str, exc: Exception) -> None:
        message = f"TrajectorySaver.{hook}: {type(exc).__name__}: {exc}"
        log.warning("callback %s", message)
        trajectory.run.meta.setdefault("callback_errors", []).append(message)


class _Writer:
    """One daemon thread running queued writes in order; started on the first write."""

    def __init__(self) -> None:
        self._queue: queue.Queue[Callable[[], None]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def submit(self, job: Callable[[], None]) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="trajectory-writer", daemon=True
                )
                self._thread.start()
                atexit.register(self.flush)  # a daemon thread dies with the interpreter
        self._queue.put(job)

    def flush(self) -> None:
        self._queue.join()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                job()
            finally:
                self._queue.task_done()


def _json_text(value: Any, indent: int | None = None) -> str:
    """JSON for a trajectory file: secret values masked, lone surrogates escaped."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    return escape_surrogates(scrub_json(text) or text)


def run_status(run: Node) -> str:
    """The trajectory status of a finished run: completed, failed, stopped or waiting (an
    ask_user awaits an answer; the run resumes once it is answered)."""
    if run.status == "waiting":
        return "waiting"
    if run.status in ("stopped", "cancelled") or run.meta.get("stop_reason"):
        return "stopped"
    return "completed" if run.status == "completed" else "failed"


def _write_atomic(path: Path, data: bytes) -> None:
    """Write a whole file or nothing: a temporary file beside it, then rename."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat()


def _step_number(step: Any) -> int:
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise UsageError(f"on_screenshot step={step!r} must be an int >= 0")
    return step


def _pil(image: Any) -> Any:
    if isinstance(image, Image):
        return image.pil
    if is_image(image):
        return image
    raise UsageError(
        f"on_screenshot got {type(image).__name__}; pass a PIL image or openprogram.Image"
    )


def _action_json(action: Any) -> dict[str, Any]:
    if isinstance(action, BaseModel):
        return action.model_dump(mode="json")
    if isinstance(action, Mapping):
        dumped = to_jsonable(dict(action), None)
        if isinstance(dumped, dict):  # a dict stays a dict
            return dumped
    return {"type": type(action).__name__, "repr": repr(action)}


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def _points(action: Any) -> list[tuple[int, int]]:
    """The pixel points an action aims at: its path, else (x, y), else `coordinate`."""
    path = _field(action, "path")
    if path:
        points = []
        for point in path:
            if isinstance(point, (list, tuple)) and len(point) >= 2:
                points.append((int(point[0]), int(point[1])))
            elif _field(point, "x") is not None:
                points.append((int(_field(point, "x")), int(_field(point, "y"))))
        return points
    x, y = _field(action, "x"), _field(action, "y")
    if x is not None and y is not None:
        return [(int(x), int(y))]
    coordinate = _field(action, "coordinate")
    if isinstance(coordinate, (list, tuple)) and len(coordinate) >= 2:
        return [(int(coordinate[0]), int(coordinate[1]))]
    return []


def _annotate(screenshot: Any, points: list[tuple[int, int]], label: str) -> Any:
    """A copy of the screenshot with a ring and crosshair at each end of `points`."""
    from PIL import ImageDraw

    canvas = screenshot.convert("RGB")
    draw = ImageDraw.Draw(canvas)
    radius = max(6, round(min(canvas.size) / 40))
    if len(points) > 1:
        draw.line(points, fill=_MARK, width=3)
    for x, y in {points[0], points[-1]}:
        draw.ellipse((x - radius, y - radius, x + radius, y + radius), outline=_MARK, width=3)
        draw.line((x - 2 * radius, y, x + 2 * radius, y), fill=_MARK, width=1)
        draw.line((x, y - 2 * radius, x, y + 2 * radius), fill=_MARK, width=1)
    if label:
        x, y = points[-1]
        position = (x + radius + 4, max(0, y - radius - 12))
        box = draw.textbbox(position, label)
        draw.rectangle((box[0] - 2, box[1] - 2, box[2] + 2, box[3] + 2), fill=(255, 255, 255))
        draw.text(position, label, fill=_MARK)
    return canvas
