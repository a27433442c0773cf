"""LLMSim: an OpenAI-compatible Responses API server with a simulator and an MLX backend."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from llmsim.config import Settings

if TYPE_CHECKING:
    from llmsim.app import create_app

__all__ = ["create_app", "Settings"]
__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`llmsim.create_app`, imported when first asked for: `llmsim serve` builds the app in its worker, after
    gevent has patched it, and a master (--workers N) never imports the app's modules."""
    if name == "create_app":
        from llmsim.app import create_app

        return create_app
    raise AttributeError(f"module 'llmsim' has no attribute {name!r}")
