"""Cassettes: one recorded interaction per JSON file, written by the proxy and read by replay and `profile fit`.

A cassette holds the request body (secrets removed), the response headers that matter, and either the JSON
body or every SSE event with its time in milliseconds since the request. JSON with two-space indents and one
event per entry, so a diff shows what changed. The file name is stable: the endpoint, the model and a hash of
the normalised request, so recording the same requests again rewrites the same files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llmsim.backends.relay import TimedEvent
from llmsim.surface import by_path
from llmsim.wire import canonical

VERSION = 1
KEPT_HEADERS = ("openai-processing-ms", "openai-version", "x-request-id", "retry-after", "retry-after-ms",
                "request-id")
KEPT_PREFIXES = ("x-ratelimit-", "anthropic-ratelimit-")
KEY_PATTERN = re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}")  # OpenAI-style keys, besides the upstream's own
REDACTED = "<redacted>"


@dataclass
class Cassette:
    endpoint: str
    request: dict[str, Any]
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    events: list[TimedEvent] = field(default_factory=list)  # (seconds, event name or "", data text)
    body: Any = None  # the JSON answer when the request did not stream
    elapsed: float = 0.0  # seconds until a JSON answer came
    order: int = 0  # when it was recorded (ns since the epoch): the order sequence matching plays them in
    path: Path | None = None

    @property
    def stream(self) -> bool:
        return self.body is None

    @property
    def model(self) -> str:
        return str(self.request.get("model", ""))

    def to_json(self) -> dict[str, Any]:
        return {
            "llmsim_cassette": VERSION,
            "recorded_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.order / 1e9)),
            "order": self.order,
            "endpoint": self.endpoint,
            "request": self.request,
            "status": self.status,
            "headers": self.headers,
            **({"elapsed_ms": round(self.elapsed * 1000, 2), "body": self.body} if self.body is not None else
               {"events": [{"t_ms": round(t * 1000, 2), "event": kind, "data": _data(data)}
                           for t, kind, data in self.events]}),
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any], path: Path | None = None) -> Cassette:
        if raw.get("llmsim_cassette") != VERSION:
            raise ValueError(f"{path}: not an LLMSim cassette (version {VERSION})")
        events = [(float(e["t_ms"]) / 1000, str(e.get("event", "")), _text(e["data"])) for e in raw.get("events", [])]
        return cls(endpoint=raw["endpoint"], request=raw["request"], status=int(raw.get("status", 200)),
                   headers=dict(raw.get("headers") or {}), events=events, body=raw.get("body"),
                   elapsed=float(raw.get("elapsed_ms", 0)) / 1000, order=int(raw.get("order", 0)), path=path)


def _data(text: str) -> Any:
    """An event's data as JSON, for reading and diffing; text that is not JSON (`[DONE]`) stays text."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _text(data: Any) -> str:
    return data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), ensure_ascii=False)



def normalised(endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    """What decides the answer: model, instructions, input, tools, text format (and the chain it continues)."""
    surface = by_path(endpoint)  # its `match`: the fields that decide its answer (llmsim/surface.py)
    fields = {name: body.get(name) for name in (surface.match if surface is not None else ())}
    if isinstance(text := fields.get("text"), dict):
        fields["text"] = text.get("format")
    if isinstance(fields.get("input"), str):  # a string is one user message
        fields["input"] = [{"role": "user", "content": fields["input"]}]
    return {name: value for name, value in fields.items() if value is not None}


def request_key(endpoint: str, body: dict[str, Any], exact: bool = False) -> str:
    shown = body if exact else normalised(endpoint, body)
    return hashlib.sha256(canonical([endpoint, shown]).encode()).hexdigest()


def file_name(cassette: Cassette) -> str:
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", cassette.model)[:60] or "model"
    return f"{cassette.endpoint.replace('/', '-')}-{model}-{request_key(cassette.endpoint, cassette.request)[:12]}"


def redact(value: Any, secrets: tuple[str, ...] = ()) -> Any:
    """`value` with every secret and every `sk-...` key in its strings replaced."""
    if isinstance(value, str):
        for secret in secrets:
            if secret:
                value = value.replace(secret, REDACTED)
        return KEY_PATTERN.sub(REDACTED, value)
    if isinstance(value, dict):
        return {key: redact(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [redact(item, secrets) for item in value]
    return value


def kept_headers(headers: Any) -> dict[str, str]:
    """The response headers worth replaying: rate limits, processing time, request ids."""
    kept = {}
    for name, value in headers.items():
        lower = name.lower()
        if lower.startswith(KEPT_PREFIXES) or lower in KEPT_HEADERS:
            kept[lower] = value
    return kept


def load(directory: Path) -> list[Cassette]:
    """Every cassette in `directory`, oldest recording first."""
    cassettes = []
    for path in sorted(directory.glob("*.json")):
        cassettes.append(Cassette.from_json(json.loads(path.read_text()), path))
    return sorted(cassettes, key=lambda c: (c.order, str(c.path)))


class Writer:
    """Writes cassettes into a directory; a request recorded twice in one run gets `-2`, `-3`... so nothing
    this run recorded is overwritten, while a later run rewrites the files of the same requests."""

    def __init__(self, directory: Path, secrets: tuple[str, ...] = ()) -> None:
        self.directory = directory
        self.secrets = secrets
        self._written: set[str] = set()
        self._lock = threading.Lock()
        directory.mkdir(parents=True, exist_ok=True)

    def write(self, cassette: Cassette) -> Cassette:
        """Writes the cassette with its secrets removed; returns that copy, with its path."""
        cassette = Cassette(cassette.endpoint, redact(cassette.request, self.secrets), cassette.status,
                            redact(cassette.headers, self.secrets),
                            [(t, kind, redact(data, self.secrets)) for t, kind, data in cassette.events],
                            redact(cassette.body, self.secrets), cassette.elapsed, cassette.order or time.time_ns())
        stem = file_name(cassette)
        with self._lock:
            name, n = stem, 1
            while name in self._written:
                n += 1
                name = f"{stem}-{n}"
            self._written.add(name)
        path = self.directory / f"{name}.json"
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(cassette.to_json(), indent=2, ensure_ascii=False) + "\n")
        temporary.replace(path)  # a reader never sees half a file
        cassette.path = path
        return cassette
