"""Backends turn a Prompt into Deltas; they know nothing of HTTP, events or stores."""

from __future__ import annotations

from llmsim.backends.base import Backend
from llmsim.config import Settings


def load_backend(settings: Settings) -> Backend:
    if settings.backend == "sim":
        from llmsim.backends.sim import SimBackend

        return SimBackend()
    raise ValueError(f"unknown backend {settings.backend!r}; available: sim")
