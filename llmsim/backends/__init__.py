"""Backends turn a Prompt into Deltas; they know nothing of HTTP, events or stores."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmsim.config import Settings
from llmsim.generation import Backend

if TYPE_CHECKING:
    from llmsim.timing.profiles import Catalog

BACKENDS = ("sim", "mlx", "proxy", "replay")


def load_backend(settings: Settings) -> Backend:
    if settings.backend == "sim":
        from llmsim.backends.sim.backend import SimBackend

        return SimBackend(tool_call_rate=settings.tool_call_rate, text_mode=settings.text_mode)
    if settings.backend == "mlx":
        from llmsim.backends.mlx.backend import load
        from llmsim.backends.mlx.models import parse_specs

        return load(parse_specs(settings.models), settings.allow_download, settings.trust_remote_code,
                    settings.decode_concurrency, settings.prompt_concurrency)
    if settings.backend == "proxy":
        from llmsim.backends.proxy.backend import ProxyBackend

        return ProxyBackend.from_settings(settings)
    if settings.backend == "replay":
        from llmsim.backends.replay.backend import ReplayBackend

        return ReplayBackend.from_settings(settings)
    raise ValueError(f"unknown backend {settings.backend!r}; available: {', '.join(BACKENDS)}")


def load_models(backend: Backend, settings: Settings) -> Catalog:
    """The models a client may ask for: the backend's own when it serves real ones, else the profiles."""
    from llmsim.timing.profiles import Catalog, load_catalog  # not in serve's master (llmsim/preflight.py)

    profiles = getattr(backend, "profiles", None)
    if profiles is not None:
        return Catalog(profiles, strict=True)  # a model that is not loaded gets model_not_found
    return load_catalog(settings.profiles_dir, strict=settings.strict_models)
