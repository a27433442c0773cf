"""Fault rules as data: their fields, the `KIND;key=value` syntax of `--fault` and the `X-LLMSim-Fault` header,
and the fault file. Apart from the injector (llmsim/chaos/faults.py), which needs the event and wait machinery:
`llmsim serve` checks the rules before any worker starts (llmsim/preflight.py), importing no more than that.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from llmsim import yamlload
from llmsim.chaos.ratelimit import LIMIT_FIELDS, RateLimitConfig
from llmsim.config import Settings

Kind = Literal[
    "rate_limit", "insufficient_quota", "server_error", "bad_gateway", "overloaded", "slow_down",
    "gateway_timeout", "context_length_exceeded", "invalid_api_key", "forbidden", "timeout",
    "stream_failed", "stream_error", "stream_drop", "stream_malformed", "latency_spike", "slow_stream",
]
ALIASES = {"429": "rate_limit", "500": "server_error", "502": "bad_gateway", "503": "overloaded",
           "504": "gateway_timeout", "400": "context_length_exceeded", "401": "invalid_api_key", "403": "forbidden"}
STREAM_KINDS = frozenset({"stream_failed", "stream_error", "stream_drop", "stream_malformed", "latency_spike",
                          "slow_stream"})
DEFAULT_AFTER_EVENTS = 8  # a stream fault with no trigger hits a few deltas into the output
DEFAULT_RETRY_AFTER = 1.0  # seconds, for an injected rate_limit fault that names none
MAX_RETRY_AFTER = 86400.0  # seconds an injected error may tell a client to wait
MAX_HANG = 3600.0  # a `timeout` with no `seconds` waits for the client to give up, at most this long; and the
# longest any fault may wait (a spike, a slow stream's gap): past it, the rule or header is refused


@dataclass(frozen=True)
class RequestInfo:
    endpoint: str
    models: tuple[str, ...]  # as requested, and the profile's id
    api_key: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)


class Fault(BaseModel):
    """What goes wrong. `seconds`: how long a timeout hangs (unset: until the client gives up), a latency
    spike pauses, or a slow stream waits before each event. `after_events` / `after_tokens`: when a stream
    fault starts (output tokens, reasoning included)."""

    model_config = ConfigDict(extra="forbid")
    kind: Kind
    message: str | None = None
    retry_after: float | None = Field(None, ge=0)
    seconds: float | None = Field(None, ge=0, le=MAX_HANG)
    after_events: int | None = Field(None, ge=0)
    after_tokens: int | None = Field(None, ge=0)

    @field_validator("kind", mode="before")
    @classmethod
    def _alias(cls, value: Any) -> Any:
        return ALIASES.get(str(value), value) if isinstance(value, (str, int)) else value

    @field_validator("seconds", "retry_after")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):  # `inf` would wait forever or overflow a clock
            raise ValueError("Input should be a finite number")
        return value

    @field_validator("retry_after")
    @classmethod
    def _sane_retry(cls, value: float | None) -> float | None:
        if value is not None and value > MAX_RETRY_AFTER:  # past a day it overflows the headers' milliseconds
            raise ValueError(f"Input should be at most {MAX_RETRY_AFTER:g} seconds")
        return value

    @model_validator(mode="after")
    def _fits_kind(self) -> Fault:
        if (self.after_events is not None or self.after_tokens is not None) and self.kind not in STREAM_KINDS:
            raise ValueError(f"after_events / after_tokens apply to stream faults, not to {self.kind!r}")
        if self.kind in ("latency_spike", "slow_stream") and self.seconds is None:
            raise ValueError(f"{self.kind!r} needs `seconds`")
        return self


class Rule(Fault):
    """A fault plus which requests get it. With no selector every request in scope gets it; otherwise any
    selector that says yes fires the rule. Indexes count the requests in the rule's scope, from 1."""

    name: str | None = None
    probability: float | None = Field(None, ge=0, le=1)
    first: int | None = Field(None, ge=0)
    every: int | None = Field(None, ge=1)
    requests: list[int] | None = None
    models: list[str] | None = None
    endpoints: list[str] | None = None
    api_keys: list[str] | None = None
    metadata: dict[str, str] | None = None

    @property
    def label(self) -> str:
        return self.name or self.kind

    def in_scope(self, request: RequestInfo) -> bool:
        return ((self.models is None or bool(set(self.models) & set(request.models)))
                and (self.endpoints is None or request.endpoint in self.endpoints)
                and (self.api_keys is None or request.api_key in self.api_keys)
                and (self.metadata is None or all(request.metadata.get(k) == v for k, v in self.metadata.items())))

    def scheduled(self, index: int) -> bool:
        return ((self.first is not None and index <= self.first)
                or (self.every is not None and index % self.every == 0)
                or (self.requests is not None and index in self.requests))

    @property
    def unconditional(self) -> bool:
        return self.probability is None and self.first is None and self.every is None and self.requests is None


class FaultConfig(BaseModel):
    """The whole chaos setup: a seed for probabilities, the rules in order (the first that fires wins), and
    rate limits."""

    model_config = ConfigDict(extra="forbid")
    seed: int | None = None
    faults: list[Rule] = Field(default_factory=list)
    rate_limits: RateLimitConfig = Field(default_factory=lambda: RateLimitConfig.model_validate({}))


class FaultConfigError(Exception):
    """A fault file or flag that cannot be used; the message names the file or flag and the field."""


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())


def load_config(path: Path) -> FaultConfig:
    """A YAML or JSON file (JSON is YAML)."""
    try:
        return FaultConfig.model_validate(yamlload.safe_load(path.read_text()) or {})
    except OSError as exc:
        raise FaultConfigError(f"{path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise FaultConfigError(f"{path}: not valid YAML or JSON: {exc}") from exc
    except ValidationError as exc:
        raise FaultConfigError(f"{path}: {_problems(exc)}") from exc


def parse_spec(spec: str) -> dict[str, Any]:
    """`KIND;key=value;...` (the header and `--fault` syntax) → fields; list values are comma-separated."""
    kind, *pairs = [part.strip() for part in spec.split(";")]
    fields: dict[str, Any] = {"kind": kind}
    for pair in filter(None, pairs):
        key, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"expected key=value, got {pair!r}")
        key = key.strip()
        if key in ("models", "endpoints", "api_keys", "requests"):
            fields[key] = [v.strip() for v in value.split(",") if v.strip()]
        elif key == "metadata":
            fields[key] = dict(item.split(":", 1) for item in value.split(",") if ":" in item)
        else:
            fields[key] = value.strip()
    return fields


def parse_rule(spec: str) -> Rule:
    try:
        return Rule.model_validate(parse_spec(spec))
    except (ValueError, ValidationError) as exc:
        detail = _problems(exc) if isinstance(exc, ValidationError) else str(exc)
        raise FaultConfigError(f"fault {spec!r}: {detail}") from exc


def fault_config(settings: Settings) -> FaultConfig:
    """The file's config, then the `--fault` rules after its own, then `--rpm` / `--tpm` / `--itpm` / `--otpm`
    where it sets none."""
    config = load_config(settings.faults_file) if settings.faults_file else FaultConfig()
    limits = config.rate_limits.model_copy(update={
        name: getattr(config.rate_limits, name) or getattr(settings, name) for name in LIMIT_FIELDS})
    rules = config.faults + [parse_rule(spec) for spec in settings.fault_rules]
    return config.model_copy(update={"faults": rules, "rate_limits": limits})


def parse_forced(spec: str) -> Fault:
    """The `X-LLMSim-Fault` header: one fault and its parameters, no selection."""
    return Fault.model_validate(parse_spec(spec))
