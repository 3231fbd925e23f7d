"""Reading a DAG view back: the embedded payload, and its reads decoded."""

from __future__ import annotations

import json
import re
from typing import Any

_DATA = re.compile(
    r'<script type="application/json" id="(opv-[0-9a-f]+)-data">(.*?)</script>', re.S
)


def payload(html: str) -> dict[str, Any]:
    found = _DATA.search(html)
    assert found, "no embedded payload"
    return json.loads(found.group(2))


def decoded_reads(data: dict[str, Any]) -> dict[int, list[int]]:
    """Row index -> full reads, undoing the diff encoding as the browser does."""
    full: dict[int, list[int]] = {}
    for index, row in enumerate(data["nodes"]):
        encoded = row[14]
        if row[1] != "l":
            continue
        if not encoded:
            full[index] = []
        elif encoded[0] < 0:
            full[index] = list(encoded[2])
        else:
            removed = set(encoded[1])
            full[index] = sorted([r for r in full[encoded[0]] if r not in removed] + encoded[2])
    return full


def decoded_hidden(data: dict[str, Any]) -> dict[int, dict[int, list[Any]]]:
    """Row index of each llm call -> {hidden row: [code, rule template, row of the call
    it names]}, undoing the run and change encoding as the browser does."""
    full: dict[int, dict[int, int]] = {}
    for index, row in enumerate(data["nodes"]):
        if row[1] != "l":
            assert row[16] == 0
            continue
        previous, removed, added = row[16]
        hidden = dict(full[previous]) if removed != 0 else {}
        for start, count in zip(removed[::2], removed[1::2], strict=True) if removed else ():
            for gone in range(start, start + count):
                del hidden[gone]
        for start, count, reason in zip(added[::3], added[1::3], added[2::3], strict=True):
            hidden.update(dict.fromkeys(range(start, start + count), reason))
        full[index] = hidden
    table = [
        [data["codes"][code], data["rules"][rule], call] for code, rule, call in data["reasons"]
    ]
    return {
        call: {row: table[reason] for row, reason in hidden.items()}
        for call, hidden in full.items()
    }
