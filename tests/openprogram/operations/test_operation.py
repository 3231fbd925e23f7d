"""Operation: JSON, versions, the kind registry and its errors."""

from __future__ import annotations

import json

import pytest

from openprogram import UsageError
from openprogram.errors import UnsupportedOperation
from openprogram.operations import Operation, operation_kind
from openprogram.operations.operation import kind_of
from tests.openprogram.operations import kinds  # noqa: F401 - registers the test kinds


def test_an_operation_is_json_with_kind_args_version_and_a_fresh_id():
    first = Operation("test.add", {"a": 1, "b": 2})
    second = Operation("test.add", {"a": 1, "b": 2}, 1)
    assert first.id != second.id and first.id.startswith("op-")
    data = json.loads(first.to_json())
    assert data == {"kind": "test.add", "args": {"a": 1, "b": 2}, "version": 1, "id": first.id}
    assert Operation.model_validate(data) == first


def test_args_that_are_not_json_are_a_usage_error_naming_the_kind():
    with pytest.raises(UsageError, match=r"'test\.add' are not JSON"):
        Operation("test.add", {"a": object()}).to_json()


def test_an_unregistered_kind_or_version_is_refused_naming_both():
    with pytest.raises(
        UnsupportedOperation, match=r"kind 'test\.add' version 7.*versions \[1\]"
    ) as e:
        kind_of("test.add", 7)
    assert (e.value.kind, e.value.version) == ("test.add", 7)
    with pytest.raises(UnsupportedOperation, match="registers no executor for that kind"):
        kind_of("nobody.registered", 1)


def test_a_kind_registers_per_version_with_its_effect():
    @operation_kind("test.versioned", version=2, effect="idempotent")
    def v2(args, context):
        return "two"

    assert kind_of("test.versioned", 2).effect == "idempotent"
    assert kind_of("test.versioned", 2).module == __name__
    with pytest.raises(UnsupportedOperation):
        kind_of("test.versioned", 1)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"version": 0}, "version is an int >= 1"),
        ({"effect": "twice"}, "effect is 'once' or 'idempotent'"),
    ],
)
def test_bad_kind_settings_are_usage_errors(settings, message):
    with pytest.raises(UsageError, match=message):
        operation_kind("test.bad", **settings)
