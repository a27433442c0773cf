"""The contract for backends that answer a whole request rather than a Prompt: proxy and replay.

Their answer is the upstream's (or the recording's) own events and ids, byte for byte in meaning, so they sit
where a backend sits but hand the pipeline serialized events instead of Deltas: rebuilding events from Deltas
would mint new ids and lose the upstream's fields. The pipeline still applies faults, rate limits, timing and
stores around them (the relay road, llmsim/relaying.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from llmsim.errors import APIError
from llmsim.timing.recorded import TimedEvent

if TYPE_CHECKING:
    from llmsim.surface import Surface


@dataclass(frozen=True)
class Exchange:
    """One client request as the relay sees it: its surface (llmsim/surface.py: the upstream path and auth, the
    cassette match key) and the JSON body, untouched. `raw`: the body's bytes as the client sent them, when at
    hand (a proxy forwards them as they are)."""

    surface: Surface
    body: dict[str, Any]
    raw: bytes | None = None
    path: str | None = None  # where a proxy forwards it (its surface's `outline`); None: the surface's path
    streamed: bool | None = None  # whether it streams (its surface's `outline`); None: as the body says

    @property
    def endpoint(self) -> str:
        """The upstream path: where a proxy forwards it, a cassette's `endpoint`."""
        return self.surface.path if self.path is None else self.path

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream")) if self.streamed is None else self.streamed


@dataclass
class Reply:
    """An answer: a JSON `body`, or `events` as they come. `timed`: the events carry recorded offsets the
    pipeline waits for (replay); a live upstream's events need no waiting. `wait`: seconds a recorded JSON
    answer took."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: Any = None
    events: Iterator[TimedEvent] | None = None
    timed: bool = False
    wait: float = 0.0
    chunks: Iterator[bytes] | None = None  # instead of `events`: a live stream's SSE bytes, as they come


@runtime_checkable
class Relay(Protocol):
    """A relaying backend (proxy, replay), the other protocol beside a generating one (llmsim/generation.py
    `Backend`): the pipeline tells them apart by type (`isinstance(backend, Relay)`), once."""

    name: str

    def relay(self, exchange: Exchange) -> Reply | None:
        """The answer, or None to let the pipeline generate one (replay's miss with `--on-miss sim`).
        An upstream's error answer is raised as an APIError with its status and envelope."""
        ...


@dataclass
class Relayed:
    """What the pipeline makes of a Reply: the events timed, watched for faults and stored, ready to send."""

    status: int
    headers: dict[str, str]
    body: Any = None
    events: Iterator[tuple[str, str]] | None = None  # (SSE event name or "", data)
    chunks: Iterator[bytes] | None = None  # instead of `events`: SSE bytes to send as they are


def upstream_error(status: int, body: Any, headers: dict[str, str]) -> APIError:
    """An upstream's (or a recording's) error answer as the same error here: status, envelope and headers."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        error = {"message": f"The upstream answered {status} with no OpenAI error body.", "type": "server_error"}
    retry = {k: v for k, v in headers.items() if k.startswith(("retry-after", "x-ratelimit-"))}
    return APIError(str(error.get("message") or ""), status=status, type=str(error.get("type") or "server_error"),
                    param=error.get("param"), code=error.get("code"), headers=retry)
