"""The upstream's key, checked before start-up: a proxy that forwarded with no key because its variable was unset
would send every request upstream unauthenticated and each would fail there, far from the cause."""

from __future__ import annotations

import os

from llmsim.config import Settings


def forwards(settings: Settings) -> bool:
    """Whether this server sends requests upstream (proxy, or replay recording its misses)."""
    return settings.backend == "proxy" or settings.backend == "replay" and settings.on_miss == "proxy"


def upstream_key(settings: Settings) -> str | None:
    """The key to send upstream; None when running keyless was asked for (`--upstream-keyless`)."""
    return None if settings.upstream_keyless else os.environ.get(settings.upstream_api_key_env) or None


def missing_key(settings: Settings) -> str | None:
    """The one line that stops start-up when the key variable is unset or empty, naming it."""
    if not forwards(settings) or settings.upstream_keyless or upstream_key(settings):
        return None
    return (f"the upstream key variable {settings.upstream_api_key_env} is not set: set it, name another with "
            "--upstream-api-key-env, or pass --upstream-keyless to forward with no key")
