"""OpenAI-compatible servers reached with the openai SDK directly, without importing litellm.

Owns the fast path of `Runtime("openai/<name>", api_base=URL)`: litellm takes seconds to
import, the openai SDK (which litellm itself uses for these servers) a fraction of one.
Replies, streams, usage and errors take exactly the shapes they take through litellm
(LiteLLMModel's parsing; _litellm.translate_error knows the SDK's exception classes), and
prices come from litellm's own cost map file. Start at direct_model().
"""

from __future__ import annotations

import functools
import importlib.util
import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from openprogram.errors import ModelAuthError
from openprogram.models._litellm import LiteLLMModel

__all__ = ["OpenAICompatibleModel", "direct_model", "needs_litellm"]

log = logging.getLogger("openprogram")

_PREFIX = "openai/"
# what the SDK's chat.completions.create takes besides model and messages; a call with
# anything else (a litellm-only option) goes through litellm, so nothing is dropped
_REQUEST = frozenset(
    {"temperature", "top_p", "max_tokens", "max_completion_tokens", "stop", "seed", "n",
     "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
     "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "stream",
     "stream_options", "reasoning_effort", "metadata", "service_tier", "store",
     "modalities", "prediction", "audio", "web_search_options", "verbosity",
     "extra_headers", "extra_query", "extra_body", "timeout"}
)  # fmt: skip
_CLIENT = frozenset({"api_base", "base_url", "api_key", "organization"})
_IGNORED = frozenset({"num_retries", "max_retries"})  # the runtime retries, never the SDK


def needs_litellm(name: str, **kwargs: Any) -> bool:
    """Whether model `name` with these options is served through litellm (every provider
    but an `openai/` name at an `api_base`, which the openai SDK reaches directly)."""
    if not name.startswith(_PREFIX) or not (kwargs.get("api_base") or kwargs.get("base_url")):
        return True
    return os.environ.get("OPENPROGRAM_LITELLM", "").strip().lower() == "always" or bool(
        set(kwargs) - _REQUEST - _CLIENT - _IGNORED
    )


def direct_model(name: str, *, timeout: float | None, **kwargs: Any) -> LiteLLMModel | None:
    """An OpenAICompatibleModel for `name` when the openai SDK can serve it exactly as
    litellm would (an `openai/` name with an `api_base`, and only options the SDK takes);
    None otherwise (the caller uses litellm), and always with OPENPROGRAM_LITELLM=always."""
    if needs_litellm(name, **kwargs):  # OPENPROGRAM_LITELLM=always: litellm's own callbacks
        return None
    if importlib.util.find_spec("openai") is None:  # pragma: no cover - litellm requires it
        return None
    return OpenAICompatibleModel(name, timeout=timeout, **kwargs)


class OpenAICompatibleModel(LiteLLMModel):
    """`openai/<name>` at an OpenAI-compatible `api_base`, reached with the openai SDK."""

    routes_any_name = True  # litellm, too, sends any name after "openai/" to api_base

    def __init__(self, name: str, *, timeout: float | None = None, **kwargs: Any) -> None:
        super().__init__(name, timeout=timeout, **kwargs)
        self._client: Any = None

    def _send(self, arguments: dict[str, Any]) -> Any:
        options = {k: v for k, v in arguments.items() if k not in _CLIENT | _IGNORED}
        options.pop("model", None)
        moved = any(arguments[k] != self._kwargs.get(k) for k in _CLIENT & set(arguments))
        if moved or set(options) - _REQUEST - {"messages"}:  # a per-call litellm option
            return super()._send(arguments)
        # the messages as litellm sends them: keys whose value is None left out
        options["messages"] = [
            {k: v for k, v in m.items() if v is not None} if isinstance(m, dict) else m
            for m in options.get("messages") or ()
        ]
        if isinstance(options.get("response_format"), type):
            options["response_format"] = _strict_schema(options["response_format"])
        return self._sdk().chat.completions.create(model=self.name[len(_PREFIX) :], **options)

    def _sdk(self) -> Any:
        if self._client is None:
            import openai

            options: dict[str, Any] = {"timeout": self.timeout} if self.timeout else {}
            self._client = openai.OpenAI(
                base_url=self._kwargs.get("api_base") or self._kwargs.get("base_url"),
                api_key=self._kwargs.get("api_key") or os.environ.get("OPENAI_API_KEY"),
                organization=self._kwargs.get("organization"),
                max_retries=0,
                **options,
            )
        return self._client

    def _check_credentials(self, arguments: dict[str, Any]) -> None:
        """ModelAuthError before anything is sent when no key is given, as through
        litellm (which asks for OPENAI_API_KEY for every `openai/` model)."""
        if arguments.get("api_key") or os.environ.get("OPENAI_API_KEY"):
            return
        raise ModelAuthError(
            f"model {self.name!r} needs an API key, and OPENAI_API_KEY is not set: set "
            "OPENAI_API_KEY in the environment, or pass Runtime(..., api_key=...) (any "
            "text, for a local server that checks none). Nothing was sent."
        )

    def _parse_reply(self, response: Any, latency: float) -> Any:
        # the SDK builds replies without validating them; litellm refuses a usage block
        # whose counts are not numbers, and so do we (ModelUnavailable, retried)
        _check_usage(getattr(response, "usage", None))
        return super()._parse_reply(response, latency)

    def _supports_schema(self) -> bool:
        return bool(_entry(self.name).get("supports_response_schema"))

    def _cost(self, response: Any) -> float | None:
        if "litellm" in sys.modules:  # already paid for: the very same computation
            return super()._cost(response)
        return _price(self.name, getattr(response, "usage", None))

    def _stream_cost(self, usage: Any) -> float | None:
        if "litellm" in sys.modules:
            return super()._stream_cost(usage)
        return _price(self.name, usage)


def _strict_schema(model: type) -> dict[str, Any]:
    """The strict json_schema response format litellm sends for a pydantic class, made
    with the openai SDK's public `pydantic_function_tool` (the same strict schema as its
    private `type_to_response_format_param`, which litellm calls)."""
    import openai

    schema = openai.pydantic_function_tool(model)["function"]["parameters"]
    return {
        "type": "json_schema",
        "json_schema": {"schema": schema, "name": model.__name__, "strict": True},
    }


def _check_usage(usage: Any) -> None:
    for field in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = getattr(usage, field, None)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ValueError(f"usage.{field} is {value!r}, not a count of tokens")


@functools.lru_cache(maxsize=1)
def _prices() -> dict[str, Any]:
    """litellm's cost map, read from the file it ships without importing litellm (found by
    its spec: importlib.resources would import the package, seconds): the prices the
    litellm path charges, so both paths price a reply alike. genai-prices would be the
    independent source, but its import and first lookup add about 0.5 s to the first
    reply this path exists to make fast."""
    spec = importlib.util.find_spec("litellm")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        path = Path(folder) / "model_prices_and_context_window_backup.json"
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(loaded, dict):
            return loaded
    log.debug("litellm's cost map file was not found; direct calls are unpriced")
    return {}


def _entry(name: str) -> dict[str, Any]:
    prices = _prices()
    found = prices.get(name) or prices.get(name[len(_PREFIX) :])
    return found if isinstance(found, dict) else {}


def _price(name: str, usage: Any) -> float | None:
    """USD for `usage` at the model's per-token prices (cached prompt tokens at the
    cache-read price); None when the model has no price (a local model's name)."""
    entry = _entry(name)
    given, taken = entry.get("input_cost_per_token"), entry.get("output_cost_per_token")
    if usage is None or not isinstance(given, (int, float)) or not isinstance(taken, (int, float)):
        return None
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    details = getattr(usage, "prompt_tokens_details", None)
    cached = min(prompt, int(getattr(details, "cached_tokens", 0) or 0))
    cache_price = entry.get("cache_read_input_token_cost")
    if not isinstance(cache_price, (int, float)):
        cache_price = given
    return (prompt - cached) * given + cached * cache_price + completion * taken
