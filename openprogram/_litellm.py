"""Provider models through litellm, and the one place litellm errors are translated.

litellm is imported on first use (it is slow to import), with its cost map read from
the installed package rather than fetched, and its telemetry off. API keys come from the
provider's usual environment variables and never appear in errors we raise.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import time
from collections.abc import Iterator
from typing import Any

from openprogram.errors import (
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelUnavailable,
)
from openprogram.models import ModelReply, ModelRequest, ToolCall
from openprogram.usage import usage_from_response

__all__ = ["LiteLLMModel", "translate_error"]

_litellm: Any = None

# litellm exception class name -> our error class; checked along each class's MRO, so a
# subclass litellm adds later falls back to its parent's mapping. A test pins coverage.
ERROR_MAP: dict[str, type[ModelError]] = {
    "AuthenticationError": ModelAuthError,
    "PermissionDeniedError": ModelAuthError,
    "CallerCredentialAuthenticationError": ModelAuthError,
    "BadRequestError": ModelBadRequest,
    "InvalidRequestError": ModelBadRequest,
    "NotFoundError": ModelBadRequest,
    "UnprocessableEntityError": ModelBadRequest,
    "ContextWindowExceededError": ModelBadRequest,
    "ContentPolicyViolationError": ModelBadRequest,
    "UnsupportedParamsError": ModelBadRequest,
    "ImageFetchError": ModelBadRequest,
    "JSONSchemaValidationError": ModelBadRequest,
    "UnsupportedEndpointError": ModelBadRequest,
    "EndpointNotSupportedByModelError": ModelBadRequest,
    "MalformedRequestFieldError": ModelBadRequest,
    "LiteLLMUnknownProvider": ModelBadRequest,
    "ModelNotMappedError": ModelBadRequest,
    "RejectedRequestError": ModelBadRequest,
    "BlockedPiiEntityError": ModelBadRequest,
    "GuardrailRaisedException": ModelBadRequest,
    "SensitiveDataRouteException": ModelBadRequest,
    "ModifyResponseException": ModelBadRequest,
    "PaymentRequiredError": ModelAuthError,
    "BudgetExceededError": ModelBadRequest,
    "RateLimitError": ModelUnavailable,
    "CallerCredentialRateLimitError": ModelUnavailable,
    "Timeout": ModelUnavailable,
    "APIConnectionError": ModelUnavailable,
    "InternalServerError": ModelUnavailable,
    "ServiceUnavailableError": ModelUnavailable,
    "BadGatewayError": ModelUnavailable,
    "MidStreamFallbackError": ModelUnavailable,
    "APIResponseValidationError": ModelUnavailable,
    "VectorStoreSearchError": ModelBadRequest,
    "MockException": ModelBadRequest,
    "OpenAIError": ModelBadRequest,
}

_BY_STATUS: dict[int, type[ModelError]] = {
    401: ModelAuthError,
    403: ModelAuthError,
    408: ModelUnavailable,
    409: ModelUnavailable,
    429: ModelUnavailable,
}

_KEYLIKE = re.compile(r"(sk-|key-|AIza)[A-Za-z0-9_\-*]{6,}")


def import_litellm() -> Any:
    """Import litellm once, offline-safe: local cost map, no telemetry, quiet."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.telemetry = False
        litellm.suppress_debug_info = True
        _litellm = litellm
    return _litellm


def translate_error(exc: BaseException, model: str) -> ModelError:
    """Our ModelError for a litellm/OpenAI exception: typed, keys redacted, with a fix."""
    matched = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in ERROR_MAP), None)
    status = getattr(exc, "status_code", None)
    if matched in (None, "OpenAIError") and isinstance(status, int):
        target = _BY_STATUS.get(status) or (ModelUnavailable if status >= 500 else ModelBadRequest)
    else:
        target = ERROR_MAP.get(matched or "", ModelError)
    message = _KEYLIKE.sub("***", str(exc))
    hint = {
        ModelAuthError: "check the API key in the provider's environment variable "
        "(e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY) and the account's access",
        ModelBadRequest: "the provider refused the request: check the model name, "
        "parameters and message size",
        ModelUnavailable: "a transient provider problem; it is retried automatically",
    }.get(target, "see the provider's message above")
    error = target(f"model {model!r}: {type(exc).__name__}: {message} — {hint}")
    error.retry_after = _retry_after(exc)  # type: ignore[attr-defined]
    error.status_code = status  # type: ignore[attr-defined]
    return error


def _retry_after(exc: BaseException) -> float | None:
    headers: Any = None
    response = getattr(exc, "response", None)
    if response is not None:
        headers = getattr(response, "headers", None)
    if not headers:
        headers = getattr(exc, "litellm_response_headers", None)
    if not headers:
        return None
    value = headers.get("retry-after") or headers.get("Retry-After")
    if value is None:
        milliseconds = headers.get("retry-after-ms")
        return float(milliseconds) / 1000 if milliseconds else None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


class LiteLLMModel:
    """A provider model reached through litellm (`"openai/gpt-4o"`, `"anthropic/..."`)."""

    def __init__(self, name: str, *, timeout: float | None = None, **kwargs: Any) -> None:
        self.name = name
        self.timeout = timeout
        self._kwargs = kwargs

    def _arguments(self, request: ModelRequest) -> dict[str, Any]:
        arguments: dict[str, Any] = {
            "model": self.name,
            "messages": request.messages,
            "num_retries": 0,
            "max_retries": 0,
            **self._kwargs,
            **request.options,
        }
        if self.timeout is not None:
            arguments["timeout"] = self.timeout
        if request.response_format is not None and self._supports_schema():
            arguments["response_format"] = request.response_format
        if request.tools:
            arguments["tools"] = request.tools
        return arguments

    def _supports_schema(self) -> bool:
        litellm = import_litellm()
        try:
            return bool(litellm.supports_response_schema(model=self.name))
        except Exception:  # unknown model: fall back to the prompt's schema instruction
            return False

    def complete(self, request: ModelRequest) -> ModelReply:
        litellm = import_litellm()
        started = time.perf_counter()
        try:
            response = litellm.completion(**self._arguments(request))
        except Exception as exc:
            raise translate_error(exc, self.name) from exc
        return self._reply(response, time.perf_counter() - started)

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        # litellm.acompletion leaves a background logging task on the caller's event loop
        # that outlives it ("Task was destroyed but it is pending" when the loop closes);
        # the blocking call on a worker thread gives the same concurrency without it.
        return await asyncio.to_thread(self.complete, request)

    def stream(self, request: ModelRequest) -> Iterator[str | ModelReply]:
        """The reply's text chunks as the provider sends them, then a ModelReply with
        the whole text and the usage (when the provider reports it)."""
        litellm = import_litellm()
        started = time.perf_counter()
        arguments = {**self._arguments(request), "stream": True}
        arguments.setdefault("stream_options", {"include_usage": True})
        try:
            response = litellm.completion(**arguments)
        except Exception as exc:
            raise translate_error(exc, self.name) from exc
        chunks = iter(response)
        parts: list[str] = []
        usage = None
        try:
            while True:
                try:
                    chunk = next(chunks)
                except StopIteration:
                    break
                except Exception as exc:
                    raise translate_error(exc, self.name) from exc
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                choices = getattr(chunk, "choices", None) or ()
                text = choices[0].delta.content if choices else None
                if text:
                    parts.append(text)
                    yield text
        finally:  # a reader that stops early: release the connection now
            close = getattr(response, "close", None)
            if callable(close):
                close()
        yield ModelReply(
            text="".join(parts),
            usage=usage_from_response(
                usage, cost_usd=self._stream_cost(usage), latency_s=time.perf_counter() - started
            ),
        )

    def _stream_cost(self, usage: Any) -> float | None:
        if usage is None:
            return None
        litellm = import_litellm()
        try:
            prompt, completion = litellm.cost_per_token(
                model=self.name,
                prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            )
            return float(prompt) + float(completion)
        except Exception:  # not in litellm's cost map: counted as unknown, not free
            return None

    def _reply(self, response: Any, latency: float) -> ModelReply:
        litellm = import_litellm()
        choice = response.choices[0]
        text = choice.message.content or ""
        tool_calls = _tool_calls(getattr(choice.message, "tool_calls", None))
        cost: float | None
        try:
            cost = float(litellm.completion_cost(completion_response=response, model=self.name))
        except Exception:  # not in litellm's cost map: counted as unknown, not free
            cost = None
        usage = usage_from_response(
            getattr(response, "usage", None), cost_usd=cost, latency_s=latency
        )
        raw = response.model_dump() if hasattr(response, "model_dump") else None
        return ModelReply(text=text, usage=usage, raw=raw, tool_calls=tool_calls)


def _tool_calls(calls: Any) -> list[ToolCall] | None:
    """The provider's tool calls as ToolCalls; arguments that are not a JSON object
    stay text, for the tool loop to report back to the model."""
    if not calls:
        return None
    found = []
    for position, call in enumerate(calls, start=1):
        function = call.function
        raw = function.arguments or "{}"
        try:
            arguments: dict[str, Any] | str = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = str(raw)
        if not isinstance(arguments, dict):
            arguments = str(raw)
        found.append(ToolCall(call.id or f"call_{position}", str(function.name), arguments))
    return found
