"""Every litellm exception class maps to one of our ModelError types."""

from __future__ import annotations

import inspect

import pytest

from openprogram.errors import ModelAuthError, ModelBadRequest, ModelError, ModelUnavailable
from openprogram.models._litellm import ERROR_MAP, import_litellm, translate_error


def litellm_exception_classes():
    exceptions = import_litellm().exceptions
    return sorted(
        (
            cls
            for _, cls in inspect.getmembers(exceptions, inspect.isclass)
            if issubclass(cls, BaseException) and cls.__module__.startswith("litellm")
        ),
        key=lambda cls: cls.__name__,
    )


def test_no_litellm_exception_is_unmapped():
    unmapped = [
        cls.__name__
        for cls in litellm_exception_classes()
        if not any(base.__name__ in ERROR_MAP for base in cls.__mro__)
        and cls.__name__ not in ("APIError",)  # mapped by status code
    ]
    assert unmapped == []


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, ModelAuthError),
        (403, ModelAuthError),
        (429, ModelUnavailable),
        (500, ModelUnavailable),
        (404, ModelBadRequest),
    ],
)
def test_plain_api_errors_map_by_status(status, expected):
    litellm = import_litellm()
    error = litellm.exceptions.APIError(
        status_code=status, message="x", llm_provider="openai", model="m"
    )
    assert type(translate_error(error, "m")) is expected


def test_unknown_exceptions_become_plain_model_errors_without_keys():
    key = "sk-" + "abcdefghijklmnop"  # made here: no key-like text in the repo
    error = translate_error(RuntimeError(f"boom {key}"), "m")
    assert type(error) is ModelError and key not in str(error)
