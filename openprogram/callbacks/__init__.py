"""Lifecycle callbacks: the base class and the built-ins (DESIGN.md §7)."""

from openprogram.callbacks.base import Callback

__all__ = ["Callback"]
