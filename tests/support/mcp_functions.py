"""Agentic functions the MCP server tests serve with `openprogram mcp serve`."""

from __future__ import annotations

from openprogram import Image, agentic_function


@agentic_function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@agentic_function
def forecast(city: str) -> dict:
    """The weather in a city."""
    return {"city": city, "temperature": 21}


@agentic_function
def broken(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"broken on purpose: {reason}")


@agentic_function
def red_square(size: int = 8) -> list:
    """A red square and its caption."""
    from PIL import Image as PILImage

    return [f"a red {size}x{size} square", Image(PILImage.new("RGB", (size, size), "red"))]


def plain(x: int) -> int:
    return x


@agentic_function
def summarise(text: str) -> str:
    """Summarise a text in a few words (asks the model)."""
    from openprogram import llm

    return llm(f"Summarise in five words: {text}")
