"""The headers every API answer carries, as the real API sends them: its request id, the API version and how
long it was processed."""

from __future__ import annotations

import time
from typing import Protocol

from llmsim import ids

API_VERSION = "2020-10-01"


def request_id() -> str:
    return ids.new("req", 32)


class Headers(Protocol):
    """An answer's headers: a dict, or werkzeug's Headers."""

    def __setitem__(self, key: str, value: str, /) -> None: ...

    def setdefault(self, key: str, default: str, /) -> str: ...


def stamp(headers: Headers, request_id: str, started: float) -> None:
    """`started`: the request's `time.perf_counter()` on arrival."""
    headers["x-request-id"] = request_id
    headers["openai-version"] = API_VERSION
    headers["openai-processing-ms"] = str(int((time.perf_counter() - started) * 1000))
