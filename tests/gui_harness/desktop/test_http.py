"""The desktop server's gate and depth scan as plain functions (the server-level attacks
are in test_server.py)."""

from __future__ import annotations

import json
import socket
from email.message import Message

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gui_harness.desktop._http import Gate, HttpRefusal, _too_deep

TOKEN = "t" * 43


def headers(host: str) -> Message:
    message = Message()
    message["Host"] = host
    message["Authorization"] = f"Bearer {TOKEN}"
    return message


def test_a_wildcard_bind_answers_to_addresses_and_its_hostname_but_no_other_name():
    gate = Gate("0.0.0.0", 8765, TOKEN)
    for host in ["192.168.1.5:8765", "[fe80::1]:8765", f"{socket.gethostname()}:8765"]:
        gate.check(headers(host))
    for host in ["evil.example:8765", "192.168.1.5:8766", "192.168.1.5"]:
        with pytest.raises(HttpRefusal, match="not this server's address"):
            gate.check(headers(host))


def test_a_loopback_bind_answers_to_its_address_and_localhost_only():
    gate = Gate("127.0.0.1", 8765, TOKEN)
    gate.check(headers("127.0.0.1:8765"))
    gate.check(headers("LOCALHOST:8765"))
    with pytest.raises(HttpRefusal):
        gate.check(headers("192.168.1.5:8765"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=30,
)


def depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


@given(json_values, st.integers(min_value=0, max_value=8))
def test_the_depth_scan_agrees_with_the_parsed_json(value, limit):
    for text in (json.dumps(value).encode(), json.dumps(value, ensure_ascii=False).encode()):
        assert _too_deep(text, limit) == (depth(value) > limit)
