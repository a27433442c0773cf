"""POST /v1/messages, the one place that runs it: the same prompt rules, backends, scenarios, pacing, rate limits
and faults as /responses and /chat/completions, on the one pipeline; its transport is llmsim/api/messages.py."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llmsim.chaos.faults import Admission
from llmsim.errors import APIError
from llmsim.generation import Delta, Finish, Usage
from llmsim.messages import schema, translate
from llmsim.messages.events import MessageBuilder, dumps
from llmsim.request import Answer, ApiRequest, SerializedEvent, attach, error_of
from llmsim.responses import compat
from llmsim.runtime.fairness import fair

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.timing.profiles import Profile

ENDPOINT = "messages"


@dataclass
class Made:
    """A request admitted (scenarios, rate limits, faults) and its message's events, not yet drawn."""

    builder: MessageBuilder
    events: Iterator[SerializedEvent]
    admission: Admission


def create(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    """The answer: a relayed one, an SSE stream, or the Message's JSON."""
    relayed, admitted = pipeline.relay(ENDPOINT, asked, raw=True)
    if relayed is not None:
        return Answer(relayed=relayed, ticket=admitted.ticket if admitted else None)
    request = schema.parse(schema.CreateRequest, asked.body, asked.lenient)
    headers = compat.headers(asked.warnings)
    profile = _profile(pipeline, request.model)
    translated = translate.build_prompt(request, profile, pipeline.seed if asked.seed is None else asked.seed,
                                        asked.owner)
    if asked.text_mode:
        translated = replace(translated, prompt=replace(translated.prompt, text_mode=asked.text_mode))
    waits = pipeline.waits(translated.prompt, asked.speed)
    whole = not request.stream and not waits
    if whole:
        pipeline.hold()  # its admission goes to Redis with its request log entry as it is answered

    def make() -> Made:
        return _made(pipeline, asked, request, translated, whole, admitted)

    made = make()
    if request.stream:
        return Answer(events=fair(made.events), together=not waits and made.admission.stream_fault is None,
                      ticket=made.admission.ticket, headers=headers)
    try:
        made, failed = pipeline.finish(made, make, lambda made: error_of(made.events, made.admission.ticket))
    except BaseException as unavailable:
        attach(unavailable, made.admission.ticket)
        raise
    if failed is not None:
        error = APIError(json.loads(failed)["error"]["message"], status=500, type="api_error")
        attach(error, made.admission.ticket)
        raise error
    return Answer(body=made.builder.message, ticket=made.admission.ticket, headers=headers)


def _made(pipeline: Pipeline, asked: ApiRequest, request: schema.CreateRequest,
          translated: translate.Translated, whole: bool, admitted: Admission | None) -> Made:
    prompt, admission = pipeline.direct_and_admit(ENDPOINT, translated.prompt, asked, request.stream, whole,
                                                  admitted)
    translated = replace(translated, prompt=prompt)
    render = request.stream or admission.stream_fault is not None
    builder = MessageBuilder(translated, request.model, render)
    quiet = request.max_tokens == 0 or request.compaction is not None
    deltas = admission.deltas(_nothing(prompt.input_tokens) if quiet else
                              pipeline.generate(prompt, asked.speed, runs=True))
    if not request.stream:
        deltas = fair(deltas)  # a long answer takes turns with the worker's other requests
    events = admission.events(builder, builder.run(deltas), dumps)  # type: ignore[arg-type]
    return Made(builder, events, admission)


def _profile(pipeline: Pipeline, model: str) -> Profile:
    """The model's profile; under --strict-models a model the live API does not serve is its 404."""
    try:
        return pipeline.catalog.resolve(model, missing_status=404)
    except APIError as error:
        if error.code != "model_not_found":
            raise
        raise APIError(f"model: {model}", status=404, type="not_found_error", param="model") from None


def _nothing(input_tokens: int) -> Iterator[Delta]:
    """`max_tokens: 0`: the prompt cache is written (the builder's usage says so), nothing is generated; a
    compaction request: the builder writes its one block."""
    yield Finish("length", Usage(input_tokens=input_tokens, output_tokens=0))


def count_tokens(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    request = schema.parse(schema.CountTokensRequest, asked.body, asked.lenient, endpoint="messages")
    count = translate.count_tokens(request, _profile(pipeline, request.model))
    return Answer(body={"input_tokens": count}, headers=compat.headers(asked.warnings))
