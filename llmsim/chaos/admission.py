"""Admission: whether a request is answered, and how it goes wrong. Rate limits and faults (the X-LLMSim-Fault
header's, else the first rule that fires) decide, once the prompt is known; then a scenario directs an admitted
request (a refused one takes no turn).

The app builds one Gate and hands it to the pipeline. It raises the HTTP faults, hangs for timeouts, and gives an
Admission that settles token usage and carries the stream fault, if one was chosen. What the answer must carry
(its x-ratelimit headers, its request log entry to finish with its status) is the Admission's Ticket; an error
raised once there is one carries it too (`ticket_of`), so the transport can finish it whatever the answer is.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from pydantic import ValidationError

from llmsim.chaos.faults import Admission, StreamFault, http_error
from llmsim.chaos.ratelimit import Charge, Limits, duration
from llmsim.chaos.rules import DEFAULT_RETRY_AFTER, MAX_HANG, STREAM_KINDS, Fault, RequestInfo, parse_forced
from llmsim.chaos.scenarios import Player, ScenarioMoved
from llmsim.chaos.state import ChaosState, Decision
from llmsim.errors import APIError
from llmsim.generation import Finish, Prompt, Usage
from llmsim.request import ApiRequest, Ticket, attach
from llmsim.runtime import waits
from llmsim.timing.profiles import Catalog
from llmsim.wire import canonical

if TYPE_CHECKING:
    from llmsim.surface import Outline, Surface

log = logging.getLogger("llmsim")
FAULT_HEADER = "X-LLMSim-Fault"
FALLBACK_LIMITS = Limits(rpm=500, tpm=30_000)  # what an injected 429 reports when no real limit is set
CHARS_PER_TOKEN = 4  # a relayed request's input estimate for its rate limit; the answer's usage settles the count


class Measure(Protocol):
    """How admission is measured (llmsim/metrics/meter.py `Measured`): around the checks, a Meter after."""

    def __call__(self, prompt: Prompt, stream: bool, check: Callable[[], Admission]) -> Admission: ...


class Gate:
    """Scenario direction, rate limits and faults: what every surface's request passes between its prompt and
    the backend. Without chaos state (a pipeline built bare, in tests) everything is admitted as it is."""

    def __init__(self, state: ChaosState | None = None, scenarios: Player | None = None,
                 measure: Measure | None = None) -> None:
        self.state = state
        self.scenarios = scenarios or Player()  # scripted replies (llmsim/chaos/scenarios.py); none by default
        self.measure = measure

    def direct_and_admit(self, surface: Surface, prompt: Prompt, request: ApiRequest, stream: bool,
                         whole: bool = False, admitted: Admission | None = None) -> tuple[Prompt, Admission]:
        """Rate limits and faults, then scenarios. Raises the HTTP faults; the Admission carries a stream fault.
        `whole`: nothing of the answer leaves or waits before it is made (see ChaosState.decide). `admitted`: the
        limits and faults already checked (a relayed request the backend left to generation)."""
        def check(directed: Prompt) -> Admission:
            if admitted is not None:
                return admitted
            return self.check_limits_and_faults(surface, directed, request, stream, whole)

        player = self.scenarios
        if player.deferred():  # Redis, no scenario loaded: the admission's own script records the request
            try:
                directed, scripted_fault = player.direct(prompt, request.body, stream)
                admission = check(directed)
            except ScenarioMoved:  # the fleet loaded a scenario as this request came in: it plays that one, below
                pass
            except BaseException as error:
                player.flush(error)
                raise
            else:
                player.flush()
                admission.stream_fault = scripted_fault or admission.stream_fault
                return directed, admission
        # Admitted first: a request refused before generation (a fault, a rate limit) takes no turn and uses up
        # no rule, so the client's retry gets the reply it would have had; the transcript records it, marked.
        try:
            admission = check(prompt)  # the scripted reply changes nothing admission looks at
        except BaseException as error:
            player.refused(prompt, request.body, error)
            raise
        try:
            directed, scripted_fault = player.direct(prompt, request.body, stream)
        except BaseException as error:  # a scripted HTTP fault, an exhausted scenario: the request ends here
            attach(error, admission.ticket)
            if admission.on_finish is not None:  # nothing is generated: its reserved tokens go back
                admission.on_finish(Finish("stop", Usage(0, 0)))
            raise
        admission.stream_fault = scripted_fault or admission.stream_fault
        return directed, admission

    def check_limits_and_faults(self, surface: Surface, prompt: Prompt, request: ApiRequest, stream: bool,
                                whole: bool = False) -> Admission:
        """Rate limits and faults for one request, measured."""
        if self.state is None:
            return Admission()
        state = self.state
        if self.measure is None:
            return _limits_and_faults(state, surface, prompt, request, stream, whole)
        return self.measure(prompt, stream, lambda: _limits_and_faults(state, surface, prompt, request, stream,
                                                                        whole))


def relayed_prompt(outline: Outline, catalog: Catalog) -> Prompt:
    """What admission needs of a relayed request, from what its surface reads of it (llmsim/surface.py
    `outline`): the model, metadata, the output limit and an estimate of the input tokens (the upstream counts
    them; its usage settles the estimate)."""
    model = outline.model
    return Prompt(model=model, profile=catalog.get(model) or catalog.default, turns=[],
                  input_tokens=len(canonical(outline.said)) // CHARS_PER_TOKEN, max_output_tokens=outline.limit,
                  metadata=outline.metadata)


def _limits_and_faults(state: ChaosState, surface: Surface, prompt: Prompt, request: ApiRequest, stream: bool,
                       whole: bool) -> Admission:
    """Rate limits, then faults (the header's, else the first rule that fires), for one generating request."""
    forced = _forced(request.fault)
    model, model_id = prompt.model, prompt.profile.id
    models = (model, model_id) if model_id and model_id != model else (model,)
    entry = {"time": time.time(), "endpoint": surface.name, "model": model, "api_key": _masked(request.api_key),
             "stream": stream, "fault": None, "rule": None, "rate_limited": False, "status": None,
             "owner": request.owner,  # the key's scope: an API key as admin credential sees only its own
             **({"warnings": list(request.warnings)} if request.warnings else {})}  # see llmsim/shared/compat.py
    key = (request.api_key or "", model_id or model)
    estimate = Charge(prompt.input_tokens, prompt.max_output_tokens or 0, prompt.cached_input_tokens)
    decision = state.decide(RequestInfo(surface.name, models, request.api_key, dict(prompt.metadata or {})), entry, key,
                           lambda config: config.rate_limits.resolve(models, prompt.profile.rate_limits), estimate,
                           choose=forced is None, whole=whole)
    if decision.verdict is not None:
        decision.verdict.directional = surface.directional
    ticket = Ticket(state, decision.entry)
    try:
        return _decided(state, decision, ticket, forced, key, estimate, model, stream)
    except BaseException as error:
        attach(error, ticket)
        raise


def _decided(state: ChaosState, decision: Decision, ticket: Ticket, forced: Fault | None, key: tuple[str, str],
             estimate: Charge, model: str, stream: bool) -> Admission:
    """What the decision means for the request: refused, hung, failed, or admitted with its stream fault."""
    entry, limits, verdict = decision.entry, decision.limits, decision.verdict
    on_finish: Callable[[Finish], None] | None = None
    if verdict is not None:
        ticket.headers = verdict.headers()
        if not verdict.allowed:
            entry["rate_limited"] = True
            raise verdict.error(model)

        def on_finish(finish: Finish) -> None:
            # the reservation settled to the usage (what a cache read stays uncounted, as at admission)
            state.settle(key, limits, Charge(finish.usage.input_tokens - estimate.input,
                                             finish.usage.output_tokens - estimate.output))

    rule = decision.rule
    fault: Fault | None = forced or rule
    if fault is None:
        return Admission(on_finish, ticket=ticket)
    state.count(fault.kind)
    entry.update(fault=fault.kind, rule=rule.label if rule else "header")
    if fault.kind in STREAM_KINDS:
        return Admission(on_finish, StreamFault(fault, stream), ticket=ticket)
    if fault.kind == "timeout":
        hang(fault.seconds)
        return Admission(on_finish, ticket=ticket)
    headers = dict(ticket.headers)
    if fault.kind == "rate_limit":
        headers = _exhausted(headers, limits, fault)
    if on_finish is not None:  # nothing will be generated: give the reserved tokens back
        state.settle(key, limits, Charge(-estimate.input, -estimate.output, -estimate.cached))
    raise http_error(fault, model, headers)


def hang(seconds: float | None) -> None:
    """Wait before the first byte: `seconds`, or (None) until the client hangs up (ClientGone), at most MAX_HANG."""
    waits.wait(MAX_HANG if seconds is None else seconds)


def _forced(raw: str | None) -> Fault | None:
    """The X-LLMSim-Fault header's fault, or the 400 saying what is wrong with it."""
    if raw is None:
        return None
    try:
        return parse_forced(raw)
    except (ValueError, ValidationError) as exc:
        detail = "; ".join(e["msg"] for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        raise APIError(f"Invalid {FAULT_HEADER} header '{raw}': {detail}", param=FAULT_HEADER,
                       code="invalid_value") from None


def _masked(key: str | None) -> str | None:
    return None if key is None else (key[:3] + "…" + key[-4:] if len(key) > 10 else "****")


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
