"""Turning what a model wrote into an Action: normalize_action and its aliases.

Owns the tolerant reading of model output (JSON text, fenced blocks, computer-use
aliases such as left_click/hotkey/coordinate) into the canonical schema of actions.py.
Anything it cannot read raises InvalidAction with a message written for the model.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ValidationError

from gui_harness.actions import (
    _BY_TYPE,
    _MODELS,
    ACTION_TYPES,
    Action,
    action_adapter,
    canonical_key,
)
from gui_harness.errors import InvalidAction
from openprogram.echo import cut, echo

__all__ = ["normalize_action"]

# --- normalize_action ------------------------------------------------------------------

_KINDS: dict[str, tuple[str, dict[str, Any]]] = {}
for _kind, _aliases, _preset in [
    ("click", "click left_click leftclick tap", {}),
    ("click", "right_click rightclick", {"button": "right"}),
    ("click", "middle_click middleclick", {"button": "middle"}),
    ("double_click", "double_click doubleclick dblclick double left_double_click", {}),
    ("triple_click", "triple_click tripleclick triple left_triple_click", {}),
    ("mouse_down", "mouse_down mousedown left_mouse_down button_down press_mouse", {}),
    ("mouse_down", "right_mouse_down", {"button": "right"}),
    ("mouse_down", "middle_mouse_down", {"button": "middle"}),
    ("mouse_up", "mouse_up mouseup left_mouse_up button_up release_mouse", {}),
    ("mouse_up", "right_mouse_up", {"button": "right"}),
    ("mouse_up", "middle_mouse_up", {"button": "middle"}),
    ("move", "move mouse_move mousemove move_mouse move_to hover", {}),
    ("drag", "drag left_click_drag drag_and_drop drag_to", {}),
    ("drag", "right_drag right_click_drag", {"button": "right"}),
    ("drag", "middle_drag middle_click_drag", {"button": "middle"}),
    ("scroll", "scroll mouse_scroll wheel", {}),
    ("type", "type type_text typetext input_text write typewrite", {}),
    ("keypress", "keypress key key_press hotkey press keys key_combination shortcut", {}),
    ("keypress", "hold_key hold_keys", {}),
    ("key_down", "key_down keydown press_key_down hold_down", {}),
    ("key_up", "key_up keyup release_key release_keys", {}),
    ("wait", "wait sleep pause", {}),
    ("done", "done finish finished terminate stop complete", {}),
    ("fail", "fail failed failure give_up giveup abort", {}),
]:
    for _alias in _aliases.split():
        _KINDS[_alias] = (_kind, _preset)

_COMMENTARY = {"thought", "thoughts", "reasoning", "description", "explanation", "comment"}
_COMMENTARY |= {"note", "reason", "id", "call_id"}
_POINT_KEYS = ("coordinate", "coordinates", "coord", "point", "position", "pos", "location")
_ELEMENT_KEYS = ("element", "element_id", "element_index", "component", "mark", "index")
_TEXT_KEYS = ("text", "content", "value", "string", "message", "input")
_KEYS_KEYS = ("keys", "key", "hotkey", "combo", "combination", "shortcut", "text", "value")
_REASON_KEYS = ("reason", "message", "text", "summary", "result", "answer", "explanation")
_BUTTONS = {"left": "left", "l": "left", "primary": "left", "1": "left", "right": "right"}
_BUTTONS |= {"r": "right", "secondary": "right", "3": "right", "middle": "middle"}
_BUTTONS |= {"m": "middle", "wheel": "middle", "center": "middle", "2": "middle"}
# the side buttons: X's 8 and 9, a browser's and Windows' X1 and X2
_BUTTONS |= {"back": "back", "browser_back": "back", "x1": "back", "xbutton1": "back"}
_BUTTONS |= {"8": "back", "button8": "back", "forward": "forward", "x2": "forward"}
_BUTTONS |= {"browser_forward": "forward", "xbutton2": "forward", "9": "forward"}
_BUTTONS |= {"button9": "forward", "fwd": "forward"}
_CLICKS = {1: "click", 2: "double_click", 3: "triple_click"}
_MODIFIER_KEYS = ("modifiers", "modifier", "hold_keys", "held_keys", "with_keys", "keys")
_TARGETED = ("click", "double_click", "triple_click", "mouse_down", "mouse_up", "move", "scroll")
_BUTTONED = ("click", "double_click", "triple_click", "mouse_down", "mouse_up", "drag")
_DIRECTIONS = {"up": (0, -1), "down": (0, 1), "left": (-1, 0), "right": (1, 0)}
_DEFAULT_SCROLL_CLICKS = 3
_HINT = f"valid kinds: {', '.join(ACTION_TYPES)} (aliases like left_click, hotkey work too)"


def normalize_action(raw: Mapping[str, Any] | str | BaseModel) -> Action:
    """Turn a model's action (a dict, JSON text or ```json block) into a validated Action.

    Accepts the common computer-use spellings: `{"action": "left_click", "coordinate":
    [x, y]}`, `{"type": "hotkey", "keys": "ctrl+s"}`, `{"name": "click", "arguments":
    {...}}`, element as 3, "3" or "#3". Commentary keys (thought, reasoning, ...) are
    ignored. Raises InvalidAction naming the bad value and what valid looks like.
    """
    if isinstance(raw, _MODELS):
        return raw
    if isinstance(raw, str):
        raw = _parse_json(raw)
    if not isinstance(raw, Mapping):
        raise InvalidAction(f"an action must be a JSON object, got {echo(raw)}; {_HINT}")
    fields = _unwrap(dict(raw))
    kind_key = next((k for k in ("type", "action", "name") if isinstance(fields.get(k), str)), None)
    if kind_key is None:
        raise InvalidAction(f"action {echo(dict(raw))} has no 'type'; {_HINT}")
    spelled = fields.pop(kind_key)
    alias = spelled.strip().lower().replace("-", "_").replace(" ", "_")
    if alias not in _KINDS:
        raise InvalidAction(f"unknown action kind {echo(spelled)}; {_HINT}")
    kind, preset = _KINDS[alias]
    fields = {k: v for k, v in fields.items() if v is not None}
    if kind == "click":
        kind = _click_kind(fields)
    data: dict[str, Any] = {"type": kind, **preset}
    if kind in _TARGETED:
        data.update(_target(fields))
    if kind in _BUTTONED and "button" in fields:
        data["button"] = _button(fields.pop("button"))
    if kind in ("click", "double_click", "triple_click", "drag", "scroll"):
        # a click's keys to hold: `modifiers`, or `text` as one common schema spells them
        held = _pop_first(fields, (*_MODIFIER_KEYS, "text"))
        if held is not None:
            data["modifiers"] = _keys(held) if held != [] else None
    if kind == "drag":
        data["path"] = _drag_path(fields)
        data.update(_duration(fields, "duration_ms"))
    elif kind == "scroll":
        data.update(_scroll_amount(fields))
    elif kind == "type":
        text = _pop_first(fields, _TEXT_KEYS)
        data["text"] = str(text) if isinstance(text, (int, float)) else text
    elif kind in ("keypress", "key_down", "key_up"):
        data["keys"] = _keys(_pop_first(fields, _KEYS_KEYS))
    if kind == "keypress":
        data.update(_duration(fields, "hold_ms"))
    elif kind == "wait":
        data.update(_wait_ms(fields))
    elif kind in ("done", "fail"):
        status = str(fields.pop("status", "")).lower()
        if status in ("failure", "fail", "failed", "error", "infeasible"):
            data["type"] = "fail"
        if fields.pop("success", None) is False:
            data["type"] = "fail"
        reason = _pop_first(fields, _REASON_KEYS)
        if reason is not None:
            data["reason"] = str(reason)
    leftover = sorted(k for k in fields if k not in _COMMENTARY)
    if leftover:
        raise InvalidAction(
            f"{kind} does not take {', '.join(echo(k, 60) for k in leftover[:5])}"
            f" (in {echo(dict(raw))});"
            f" a {kind} takes {', '.join(list(_BY_TYPE[kind].model_fields)[1:])}"
        )
    try:
        return action_adapter.validate_python({k: v for k, v in data.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(
            cut(e["msg"].removeprefix("Value error, "))
            + (f" (at {cut('.'.join(map(str, e['loc'][1:])), 80)})" if len(e["loc"]) > 1 else "")
            for e in exc.errors()[:5]
        )
        raise InvalidAction(f"invalid {kind} action {echo(dict(raw))}: {problems}") from None


def _parse_json(text: str) -> Any:
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL | re.IGNORECASE)
    body = fenced[1] if fenced else text.strip()
    try:
        return json.loads(body)
    except ValueError:  # not JSON, or a number too long for Python to convert
        start, end = body.find("{"), body.rfind("}")
        if 0 <= start < end:
            try:
                return json.loads(body[start : end + 1])
            except ValueError:
                pass
    raise InvalidAction(
        f"could not read an action from {echo(text, 200)}; send one JSON object such as"
        ' {"type": "click", "x": 120, "y": 48}'
    )


def _unwrap(fields: dict[str, Any]) -> dict[str, Any]:
    """Peel envelopes: {"action": {...}}, tool calls with input/arguments."""
    if isinstance(fields.get("action"), Mapping):
        return _unwrap(dict(fields["action"]))
    for key in ("input", "arguments", "args", "parameters"):
        inner = fields.get(key)
        if key != "input" and isinstance(inner, str) and inner.lstrip().startswith("{"):
            inner = _parse_json(inner)
        if isinstance(inner, Mapping):
            inner = dict(inner)
            if not any(isinstance(inner.get(k), str) for k in ("type", "action")):
                name = fields.get("name")
                if not isinstance(name, str) or name == "computer":
                    return inner
                inner["type"] = name
            return _unwrap(inner)
    return fields


def _pop_first(fields: dict[str, Any], keys: Iterable[str]) -> Any:
    found = [k for k in keys if k in fields]
    return fields.pop(found[0]) if found else None


def _number(value: Any, what: str) -> float:
    number = None
    if not isinstance(value, bool):
        with contextlib.suppress(TypeError, ValueError, OverflowError):
            number = float(value)
    if number is None or not math.isfinite(number):
        raise InvalidAction(f"{what}={echo(value)} is not a number; give an integer")
    return number


def _int(value: Any, what: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return math.floor(_number(value, what) + 0.5)


def _point(value: Any, what: str) -> tuple[int, int]:
    if isinstance(value, str):
        value = [p for p in re.split(r"[\s,()\[\]]+", value) if p]
    if isinstance(value, Mapping) and "x" in value and "y" in value:
        value = [value["x"], value["y"]]
    if isinstance(value, (list, tuple)) and len(value) == 2:
        return _int(value[0], f"{what}[0]"), _int(value[1], f"{what}[1]")
    raise InvalidAction(f"{what}={echo(value)} is not a point; give [x, y] in pixels")


def _target(fields: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    point_key = next((k for k in _POINT_KEYS if k in fields), None)
    if point_key is not None:
        out["x"], out["y"] = _point(fields.pop(point_key), point_key)
    for axis in ("x", "y"):
        if axis in fields:
            out[axis] = _int(fields.pop(axis), axis)
    element = _pop_first(fields, _ELEMENT_KEYS)
    if element is not None:
        match = re.fullmatch(r"\s*[#\[]?\s*(\d+)\s*\]?\s*", str(element))
        if isinstance(element, (bool, float)) or not match:
            raise InvalidAction(f"element={echo(element)} is not an element number; give 3 or '#3'")
        out["element"] = int(match[1])
    cell = _pop_first(fields, ("cell", "cell_name", "address"))
    if cell is not None:  # a cell of a grid element: "B3", or [row, column] from 1
        if isinstance(cell, (list, tuple)) and len(cell) == 2:
            cell = f"R{_int(cell[0], 'cell row')}C{_int(cell[1], 'cell column')}"
        out["cell"] = str(cell).strip()
    return out


def _button(value: Any) -> str:
    button = _BUTTONS.get(str(value).strip().lower().replace("-", "_").replace(" ", "_"))
    if button is None:
        raise InvalidAction(
            f"button={echo(value)} is not one of 'left', 'right', 'middle', 'back', 'forward'"
        )
    return button


def _click_kind(fields: dict[str, Any]) -> str:
    """click, double_click or triple_click, from a click's count of clicks."""
    count = _pop_first(fields, ("count", "clicks", "num_clicks", "click_count", "times"))
    if count is None:
        return "click"
    kind = _CLICKS.get(_int(count, "count"))
    if kind is None:
        raise InvalidAction(f"count={echo(count)} is not 1, 2 or 3 clicks; send clicks apart")
    return kind


def _duration(fields: dict[str, Any], name: str) -> dict[str, int]:
    """`name` in milliseconds, from itself, `ms`-suffixed spellings or `duration` in seconds."""
    ms = _pop_first(fields, (name, "duration_ms", "hold_ms", "ms", "milliseconds"))
    if ms is not None:
        return {name: _int(ms, name)}
    seconds = _pop_first(fields, ("duration", "seconds", "secs", "hold"))
    if seconds is not None:
        return {name: math.floor(_number(seconds, "duration") * 1000 + 0.5)}
    return {}


def _drag_path(fields: dict[str, Any]) -> list[tuple[int, int]]:
    if "path" in fields:
        path = fields.pop("path")
        if not isinstance(path, (list, tuple)):
            raise InvalidAction(f"path={echo(path)} is not a list of points; give [[x, y], ...]")
        return [_point(p, f"path[{i}]") for i, p in enumerate(path)]
    start = _pop_first(fields, ("start_coordinate", "start", "from", "source"))
    end = _pop_first(fields, ("end_coordinate", "end", "to", "target", *_POINT_KEYS))
    if start is None and "start_x" in fields and "start_y" in fields:
        start = [fields.pop("start_x"), fields.pop("start_y")]
    if end is None and "end_x" in fields and "end_y" in fields:
        end = [fields.pop("end_x"), fields.pop("end_y")]
    if start is None or end is None:
        raise InvalidAction(
            "drag needs a path: give path=[[x1, y1], [x2, y2], ...] or"
            " start_coordinate=[x1, y1] and coordinate=[x2, y2]"
        )
    return [_point(start, "start"), _point(end, "end")]


def _scroll_amount(fields: dict[str, Any]) -> dict[str, int]:
    out = {}
    for name, aliases in (("scroll_x", ("scroll_x", "dx")), ("scroll_y", ("scroll_y", "dy"))):
        value = _pop_first(fields, aliases)
        if value is not None:
            out[name] = _int(value, name)
    direction = _pop_first(fields, ("direction", "scroll_direction"))
    amount = _pop_first(fields, ("amount", "scroll_amount", "clicks", "steps", "distance"))
    if direction is None:
        if amount is not None:
            out["scroll_y"] = _int(amount, "amount")
        return out
    step = _DIRECTIONS.get(str(direction).strip().lower())
    if step is None:
        raise InvalidAction(
            f"direction={echo(direction)} is not one of 'up', 'down', 'left', 'right'"
        )
    clicks = abs(_int(amount, "amount")) if amount is not None else _DEFAULT_SCROLL_CLICKS
    return {"scroll_x": step[0] * clicks, "scroll_y": step[1] * clicks}


def _keys(value: Any) -> list[str]:
    if value is None:
        raise InvalidAction('keypress needs keys: give keys=["ctrl", "s"] or keys="ctrl+s"')
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(k, str) for k in items):
        raise InvalidAction(f"keys={echo(value)} is not a list of key names; give ['ctrl', 's']")
    keys: list[str] = []
    for item in items:
        if len(item) > 1 and " " in item.strip():
            raise InvalidAction(
                f"keys={echo(value)} looks like a sequence; send one chord per keypress,"
                " e.g. 'ctrl+s'"
            )
        if len(item) <= 1 or "+" not in item:
            keys.append(canonical_key(item))
            continue
        parts = item.split("+")
        if item.endswith("++"):
            parts = [*parts[:-2], "+"]  # "ctrl++" presses ctrl and the plus key
        keys.extend(canonical_key(part) for part in parts)
    return keys


def _wait_ms(fields: dict[str, Any]) -> dict[str, int]:
    ms = _pop_first(fields, ("ms", "milliseconds"))
    if ms is not None:
        return {"ms": _int(ms, "ms")}
    seconds = _pop_first(fields, ("seconds", "duration", "time", "secs", "s"))
    if seconds is not None:
        return {"ms": math.floor(_number(seconds, "seconds") * 1000 + 0.5)}
    return {}
