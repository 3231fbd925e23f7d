"""Provider models through litellm, and the one place litellm errors are translated.

litellm is imported on first use (it is slow to import) by _tokens.import_litellm, the
one place that imports it: cost map read from the installed package, telemetry off. API
keys come from the provider's usual environment variables and never appear in errors we
raise (_secrets.py scrubs them). Every reply shape ends as text or a typed ModelError.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
import warnings
from collections.abc import Iterator
from typing import Any

from openprogram.core import _secrets
from openprogram.core.usage import usage_from_response
from openprogram.echo import cut, echo
from openprogram.errors import (
    ConfigError,
    ModelAuthError,
    ModelBadRequest,
    ModelError,
    ModelOutputError,
    ModelUnavailable,
)
from openprogram.models.model import ModelReply, ModelRequest, ToolCall
from openprogram.render._tokens import import_litellm

__all__ = ["LiteLLMModel", "translate_error"]


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

# How providers' SDKs say that no key was given at all (litellm reports some of them as
# a 500 InternalServerError, which would otherwise be retried).
_MISSING_KEY = (
    "missing credentials",
    "api_key client option must be set",
    "no api key provided",
    "api key not found",
    "missing api key",
)


def translate_error(exc: BaseException, model: str) -> ModelError:
    """Our ModelError for a litellm/OpenAI exception: typed, keys redacted, with a fix."""
    _secrets.refresh()
    _secrets.scrub_exception(exc)  # the chained cause is shown with tracebacks too
    matched = next((c.__name__ for c in type(exc).__mro__ if c.__name__ in ERROR_MAP), None)
    status = getattr(exc, "status_code", None)
    if matched in (None, "OpenAIError") and isinstance(status, int):
        target = _BY_STATUS.get(status) or (ModelUnavailable if status >= 500 else ModelBadRequest)
    else:
        target = ERROR_MAP.get(matched or "", ModelError)
    message = _secrets.scrub(_text(exc))
    if any(phrase in message.lower() for phrase in _MISSING_KEY):
        target = ModelAuthError
    hint = {
        ModelAuthError: "check the API key in the provider's environment variable "
        "(e.g. OPENAI_API_KEY, ANTHROPIC_API_KEY) and the account's access",
        ModelBadRequest: "the provider refused the request: check the model name, "
        "parameters and message size",
        ModelUnavailable: "a transient provider problem; it is retried automatically",
    }.get(target, "see the provider's message above")
    error = target(f"model {model!r}: {type(exc).__name__}: {cut(message)} — {hint}")
    error.retry_after = _retry_after(exc)  # type: ignore[attr-defined]
    error.status_code = status if isinstance(status, int) else None  # type: ignore[attr-defined]
    return error


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:  # an exception whose __str__ fails: its type is still worth a word
        return f"<{type(exc).__name__} with an unprintable message>"


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the provider asked to wait (Retry-After: seconds or an HTTP date, or
    retry-after-ms); None when absent or unreadable (the usual backoff applies)."""
    try:
        headers: Any = None
        response = getattr(exc, "response", None)
        if response is not None:
            headers = getattr(response, "headers", None)
        if not headers:
            headers = getattr(exc, "litellm_response_headers", None)
        if not headers or not hasattr(headers, "get"):
            return None
        milliseconds = _seconds(headers.get("retry-after-ms"))
        if milliseconds is not None:
            return milliseconds / 1000
        value = headers.get("retry-after") or headers.get("Retry-After")
        seconds = _seconds(value)
        if seconds is not None or not isinstance(value, str):
            return seconds
        from email.utils import parsedate_to_datetime

        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except Exception:  # a header no provider should send: fall back to the backoff
        return None


def _seconds(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, number) if math.isfinite(number) else None


def check_model_name(name: str) -> None:
    """ConfigError, before anything is sent, when litellm cannot route `name`: a
    provider prefix it does not know ("opnai/..."), or a bare name missing from its
    model list ("gpt4o-mini"); the message suggests litellm's closest names. Any model
    name after a known provider passes ("openai/my-model" with api_base=...)."""
    import difflib

    litellm = import_litellm()
    providers = {getattr(p, "value", str(p)) for p in litellm.provider_list}
    provider, slash, model = name.partition("/")
    if slash and provider in providers:
        return
    known = set(litellm.model_cost) | set(litellm.model_list)
    if not slash and name in known:
        return
    guesses = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
    if slash:
        near = difflib.get_close_matches(provider, providers, n=1, cutoff=0.6)
        guesses = [f"{n}/{model}" for n in near] + guesses
        problem = f"{provider!r} is not a provider litellm knows"
    else:
        problem = "litellm does not know this model and cannot tell its provider"
    hint = (
        f" Did you mean {' or '.join(repr(g) for g in dict.fromkeys(guesses))}?" if guesses else ""
    )
    raise ConfigError(
        f"model {echo(name)}: {problem}, so nothing was sent.{hint} Write "
        "'provider/model' (e.g. 'openai/gpt-4o-mini', 'anthropic/claude-3-5-haiku-latest'); "
        "for an OpenAI-compatible server any name follows 'openai/' "
        "(Runtime('openai/my-model', api_base=URL))."
    )


class LiteLLMModel:
    """A provider model reached through litellm (`"openai/gpt-4o"`, `"anthropic/..."`)."""

    routes_any_name = False
    """True where any model name reaches the provider (an OpenAI-compatible server): the
    name is not checked against litellm's lists."""

    def __init__(self, name: str, *, timeout: float | None = None, **kwargs: Any) -> None:
        if self.routes_any_name is False and "custom_llm_provider" not in kwargs:
            check_model_name(name)
        self.name = name
        self.timeout = timeout
        self._kwargs = kwargs
        self._credentials_seen = False
        _secrets.register(kwargs)

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
        arguments = self._arguments(request)
        self._check_credentials(arguments)
        started = time.perf_counter()
        try:
            response = self._send(arguments)
        except Exception as exc:
            raise translate_error(exc, self.name) from exc
        return self._reply(response, time.perf_counter() - started)

    def _send(self, arguments: dict[str, Any]) -> Any:
        """The provider's response (a stream when `arguments["stream"]`)."""
        return import_litellm().completion(**arguments)

    def _check_credentials(self, arguments: dict[str, Any]) -> None:
        """ModelAuthError at once when the provider's key variable is not set and no key
        was passed (litellm would otherwise fail only after the retries)."""
        if self._credentials_seen or any(
            value and _secrets.is_secret_option(name) for name, value in arguments.items()
        ):
            return
        litellm = import_litellm()
        try:
            found = litellm.validate_environment(model=self.name)
        except Exception:  # a model litellm cannot place: the call itself will say so
            return
        # only keys: a missing base URL or project has defaults or other sources
        missing = [
            name
            for name in found.get("missing_keys") or []
            if name.endswith(("_API_KEY", "_TOKEN")) and name != "OLLAMA_API_KEY"
        ]
        if not missing:
            self._credentials_seen = True
            return
        names = " or ".join(missing)
        raise ModelAuthError(
            f"model {self.name!r} needs an API key, and {names} is not set: set {names} "
            "in the environment, or pass Runtime(..., api_key=...). Nothing was sent."
        )

    async def acomplete(self, request: ModelRequest) -> ModelReply:
        # litellm.acompletion leaves a background logging task on the caller's event loop
        # that outlives it ("Task was destroyed but it is pending" when the loop closes);
        # the blocking call on a worker thread gives the same concurrency without it.
        return await asyncio.to_thread(self.complete, request)

    def stream(self, request: ModelRequest) -> Iterator[str | ModelReply]:
        """The reply's text chunks as the provider sends them, then a ModelReply with
        the whole text and the usage (when the provider reports it)."""
        started = time.perf_counter()
        arguments = {**self._arguments(request), "stream": True}
        arguments.setdefault("stream_options", {"include_usage": True})
        try:
            response = self._send(arguments)
        except Exception as exc:
            raise translate_error(exc, self.name) from exc
        chunks = iter(response)
        parts: list[str] = []
        calls: dict[int, dict[str, Any]] = {}  # a tool call's deltas, by its index
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
                delta = choices[0].delta if choices else None
                text = getattr(delta, "content", None)
                for call in getattr(delta, "tool_calls", None) or ():
                    _add_call_delta(calls, call)
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
            tool_calls=_streamed_calls(calls),
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

    def _cost(self, response: Any) -> float | None:
        """The reply's price in USD; None when the model is not in litellm's cost map."""
        try:
            litellm = import_litellm()
            return float(litellm.completion_cost(completion_response=response, model=self.name))
        except Exception:  # not in litellm's cost map: counted as unknown, not free
            return None

    def _reply(self, response: Any, latency: float) -> ModelReply:
        try:
            return self._parse_reply(response, latency)
        except ModelError:
            raise
        except Exception as exc:  # a reply shape litellm let through: transient, retried
            raise ModelUnavailable(
                f"model {self.name!r}: the provider's reply could not be read "
                f"({type(exc).__name__}: {cut(_secrets.scrub(_text(exc)))}); it is retried "
                "automatically"
            ) from None

    def _parse_reply(self, response: Any, latency: float) -> ModelReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise ModelUnavailable(
                f"model {self.name!r}: the provider's reply has no choices "
                f"(choices={echo(choices)}); it is retried automatically"
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None)
        if content is None and not getattr(message, "tool_calls", None):
            reason = getattr(choice, "finish_reason", None)
            raise ModelOutputError(
                f"model {self.name!r} replied with no content and no tool calls "
                f"(finish_reason={echo(reason)}): a content filter, or max_tokens spent before "
                "any text. Check the prompt and max_tokens, or try another model."
            )
        if content is not None and not isinstance(content, str):
            raise ModelOutputError(
                f"model {self.name!r} replied with content of type "
                f"{type(content).__name__}, not text: {echo(content)}"
            )
        text = content or ""
        tool_calls = _tool_calls(getattr(message, "tool_calls", None))
        cost = self._cost(response)
        usage = usage_from_response(
            getattr(response, "usage", None), cost_usd=cost, latency_s=latency
        )
        raw = None
        if hasattr(response, "model_dump"):
            with warnings.catch_warnings():  # pydantic's warning about an odd field type
                warnings.simplefilter("ignore")
                raw = response.model_dump()
        return ModelReply(text=text, usage=usage, raw=raw, tool_calls=tool_calls)


def _add_call_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    """Add one streamed tool-call delta: the id and name come once, the arguments'
    JSON in pieces."""
    entry = calls.setdefault(getattr(delta, "index", None) or 0, {"arguments": ""})
    function = getattr(delta, "function", None)
    entry["id"] = entry.get("id") or getattr(delta, "id", None)
    entry["name"] = entry.get("name") or getattr(function, "name", None)
    entry["arguments"] += getattr(function, "arguments", None) or ""


def _tool_calls(calls: Any) -> list[ToolCall] | None:
    """The provider's tool calls as ToolCalls."""
    if not calls:
        return None
    found = []
    for position, call in enumerate(calls, start=1):
        function = getattr(call, "function", None)
        name, raw = getattr(function, "name", None), getattr(function, "arguments", None)
        found.append(_tool_call(position, getattr(call, "id", None), name, raw))
    return found


def _streamed_calls(calls: dict[int, dict[str, Any]]) -> list[ToolCall] | None:
    """The tool calls a stream's deltas put together (see _add_call_delta)."""
    found = [
        _tool_call(position, entry["id"], entry["name"], entry["arguments"])
        for position, (_, entry) in enumerate(sorted(calls.items()), start=1)
    ]
    return found or None


def _tool_call(position: int, id: Any, name: Any, raw: Any) -> ToolCall:
    """One tool call; arguments that are not a JSON object stay text, for the tool loop
    to report back to the model."""
    raw = raw or "{}"
    try:
        arguments: dict[str, Any] | str = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError:
        arguments = str(raw)
    if not isinstance(arguments, dict):
        arguments = str(raw)
    return ToolCall(id or f"call_{position}", str(name or ""), arguments)
