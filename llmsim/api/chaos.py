"""Chaos at the HTTP edge: rate limits and faults before generation, x-ratelimit headers on every answer.

Any endpoint that generates calls `admit(...)` once it knows the model and the input tokens (Responses does
it through `gate`, a Pipeline.create hook); it raises the HTTP faults, hangs for timeouts, and hands back an
Admission that settles token usage and carries the stream fault, if one was chosen.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping

from flask import Flask, Response, current_app, g, request
from pydantic import ValidationError

from llmsim.api.metrics import metered
from llmsim.chaos.faults import (
    DEFAULT_RETRY_AFTER,
    MAX_HANG,
    STREAM_KINDS,
    Admission,
    ConnectionDropped,
    Fault,
    Gate,
    RequestInfo,
    StreamFault,
    http_error,
    parse_forced,
)
from llmsim.chaos.ratelimit import Limits, duration
from llmsim.chaos.state import ChaosState
from llmsim.errors import APIError
from llmsim.generation import Finish, Prompt
from llmsim.runtime import waits
from llmsim.runtime.waits import ClientGone

log = logging.getLogger("llmsim")
FAULT_HEADER = "X-LLMSim-Fault"
EXTENSION = "llmsim.chaos"
FALLBACK_LIMITS = Limits(rpm=500, tpm=30_000)  # what an injected 429 reports when no real limit is set


def state() -> ChaosState:
    return current_app.extensions[EXTENSION]


def install(app: Flask, chaos: ChaosState) -> None:
    """Chaos state on the app, x-ratelimit headers on every response, quiet connection drops."""
    app.extensions[EXTENSION] = chaos

    @app.after_request
    def _ratelimit_headers(response: Response) -> Response:
        answered(chaos, response.headers, response.status_code)
        return response

    @app.errorhandler(ClientGone)
    def _drop(_error: ClientGone) -> Response:
        return Response(cut())


def answered(chaos: ChaosState, headers: MutableMapping[str, str], status: int) -> None:
    """Once a request's answer is known: its x-ratelimit headers, and its request log entry finished."""
    for name, value in g.get("llmsim_ratelimit", {}).items():
        headers.setdefault(name, value)  # an error may carry its own, e.g. an injected 429
    entry = g.get("llmsim_request")
    if entry is not None:
        entry["status"] = status
        try:
            chaos.finish(entry)
        except Exception:  # the shared log is away (Redis down): the answer stands, the entry stays unfinished
            log.warning("request log entry %s not updated", entry.get("index"), exc_info=True)


def cut() -> Iterator[bytes]:
    """The body of an answer to a client that is gone: raised while the server writes it, it closes the socket,
    sending nothing."""
    raise ConnectionDropped()
    yield  # pragma: no cover - makes this a generator


def _api_key(headers: Mapping[str, str]) -> str | None:
    scheme, _, key = headers.get("Authorization", "").partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


def _masked(key: str | None) -> str | None:
    return None if key is None else (key[:3] + "…" + key[-4:] if len(key) > 10 else "****")


def _forced(headers: Mapping[str, str]) -> Fault | None:
    raw = headers.get(FAULT_HEADER)
    if raw is None:
        return None
    try:
        return parse_forced(raw)
    except (ValueError, ValidationError) as exc:
        detail = "; ".join(e["msg"] for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        raise APIError(f"Invalid {FAULT_HEADER} header '{raw}': {detail}", param=FAULT_HEADER,
                       code="invalid_value") from None


def hang(seconds: float | None) -> None:
    """Wait before the first byte: `seconds`, or (None) until the client hangs up (ClientGone), at most MAX_HANG."""
    waits.wait(MAX_HANG if seconds is None else seconds)


def admit(endpoint: str, model: str, *, model_id: str | None = None, profile_limits: Limits | None = None,
          metadata: Mapping[str, str] | None = None, input_tokens: int = 0, max_output_tokens: int | None = None,
          stream: bool = False, headers: Mapping[str, str] | None = None, whole: bool = False) -> Admission:
    """Rate limits, then faults (the header's, else the first rule that fires), for one generating request.
    `headers`: the request's (default: Flask's request). `whole`: see ChaosState.decide."""
    chaos = state()
    headers = request.headers if headers is None else headers
    forced = _forced(headers)
    api_key = _api_key(headers)
    models = (model, model_id) if model_id and model_id != model else (model,)
    entry = {"time": time.time(), "endpoint": endpoint, "model": model, "api_key": _masked(api_key),
             "stream": stream, "fault": None, "rule": None, "rate_limited": False, "status": None}
    key = (api_key or "", model_id or model)
    estimate = input_tokens + (max_output_tokens or 0)
    decision = chaos.decide(RequestInfo(endpoint, models, api_key, dict(metadata or {})), entry, key,
                           lambda config: config.rate_limits.resolve(models, profile_limits), estimate,
                           choose=forced is None, whole=whole)
    entry = g.llmsim_request = decision.entry
    limits, verdict = decision.limits, decision.verdict
    on_finish: Callable[[Finish], None] | None = None
    if verdict is not None:
        g.llmsim_ratelimit = verdict.headers()
        if not verdict.allowed:
            entry["rate_limited"] = True
            raise verdict.error(model)

        def on_finish(finish: Finish) -> None:
            chaos.settle(key, limits, finish.usage.input_tokens + finish.usage.output_tokens - estimate)

    rule = decision.rule
    fault: Fault | None = forced or rule
    if fault is None:
        return Admission(on_finish)
    chaos.count(fault.kind)
    entry.update(fault=fault.kind, rule=rule.label if rule else "header")
    if fault.kind in STREAM_KINDS:
        return Admission(on_finish, StreamFault(fault, stream))
    if fault.kind == "timeout":
        hang(fault.seconds)
        return Admission(on_finish)
    headers = dict(g.get("llmsim_ratelimit") or {})
    if fault.kind == "rate_limit":
        headers = _exhausted(headers, limits, fault)
    if on_finish is not None:  # nothing will be generated: give the reserved tokens back
        chaos.settle(key, limits, -estimate)
    raise http_error(fault, model, headers)


def _exhausted(headers: dict[str, str], limits: Limits, fault: Fault) -> dict[str, str]:
    """An injected 429's x-ratelimit headers: the real limits' (or typical ones), no requests left until
    Retry-After."""
    shown = limits if limits.rpm else FALLBACK_LIMITS
    headers.setdefault("x-ratelimit-limit-requests", str(shown.rpm))
    headers.setdefault("x-ratelimit-limit-tokens", str(limits.tpm or shown.tpm))
    headers.setdefault("x-ratelimit-remaining-tokens", headers["x-ratelimit-limit-tokens"])
    headers.setdefault("x-ratelimit-reset-tokens", "0s")
    retry_after = DEFAULT_RETRY_AFTER if fault.retry_after is None else fault.retry_after
    return {**headers, "x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": duration(retry_after)}


def gate(endpoint: str) -> Gate:
    """`admit` as a Pipeline.create hook, measured (llmsim/api/metrics.py)."""
    def check(prompt: Prompt, stream: bool, whole: bool) -> Admission:
        return metered(prompt, stream, lambda: admit(
            endpoint, prompt.model, model_id=prompt.profile.id, metadata=prompt.metadata,
            input_tokens=prompt.input_tokens, max_output_tokens=prompt.max_output_tokens, stream=stream,
            profile_limits=prompt.profile.rate_limits, whole=whole))
    return check
