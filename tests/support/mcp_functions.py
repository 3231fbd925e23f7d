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


@agentic_function
def hold(port: int) -> str:
    """Wait until the test lets go: connect to 127.0.0.1:port and read until it closes."""
    import socket

    with socket.create_connection(("127.0.0.1", port)) as connection:
        connection.recv(1)
    return "released"


@agentic_function
def chatter(rounds: int) -> int:
    """Ask the model `rounds` times (the cancelled-call tests stop it half-way)."""
    from openprogram import llm

    for number in range(rounds):
        llm(f"round {number}")
    return rounds


@agentic_function
def sign_in(user: str) -> str:
    """Fails naming the password, as a careless library might."""
    import os

    raise PermissionError(f"login failed for {user} with {os.environ['SERVICE_PASSWORD']}")


@agentic_function
def settings() -> dict:
    """The service's settings, password included."""
    import os

    return {"user": "ada", "password": os.environ["SERVICE_PASSWORD"]}
