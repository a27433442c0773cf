"""POST /v1/messages: the same prompt rules, backends, scenarios, pacing, rate limits and faults as /responses
and /chat/completions, on the one template (llmsim/orchestrate.py); and its token count."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llmsim.chaos.faults import Admission
from llmsim.errors import APIError
from llmsim.messages import schema, translate
from llmsim.messages.events import MessageBuilder
from llmsim.request import Answer, ApiRequest, SerializedEvent, error_of
from llmsim.runtime.fairness import fair
from llmsim.surface import Job

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface


@dataclass
class Made:
    """A request admitted (scenarios, rate limits, faults) and its message's events, not yet drawn."""

    builder: MessageBuilder
    events: Iterator[SerializedEvent]
    admission: Admission


@dataclass
class Read:
    request: schema.CreateRequest
    translated: translate.Translated


class Create:
    """The Messages surface's generating steps, as the one template runs them."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        request = schema.parse(schema.CreateRequest, asked.body)
        profile = pipeline.catalog.resolve(request.model)
        translated = translate.build_prompt(request, profile, pipeline.seed if asked.seed is None else asked.seed,
                                            asked.owner)
        if asked.text_mode:
            translated = replace(translated, prompt=replace(translated.prompt, text_mode=asked.text_mode))
        return Job(translated.prompt, request.stream, Read(request, translated))

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None
             ) -> Made:
        read: Read = job.request
        request = read.request
        prompt, admission = pipeline.direct_and_admit(self.surface, job.prompt, asked, request.stream, whole,
                                                      admitted)
        translated = replace(read.translated, prompt=prompt)
        render = request.stream or admission.stream_fault is not None
        builder = MessageBuilder(translated, request.model, render)
        deltas = admission.deltas(pipeline.generate(prompt, asked.speed, runs=True))
        if not request.stream:
            deltas = fair(deltas)  # a long answer takes turns with the worker's other requests
        return Made(builder, admission.events(builder, builder.run(deltas)), admission)

    def streamed(self, pipeline: Pipeline, made: Made, asked: ApiRequest, together: bool) -> Answer:
        return Answer(events=fair(made.events), together=together, ticket=made.admission.ticket)

    def drained(self, made: Made) -> APIError | None:
        failed = error_of(made.events, made.admission.ticket)
        return None if failed is None else APIError(json.loads(failed)["error"]["message"], status=500,
                                                    type="api_error")

    def answered(self, pipeline: Pipeline, made: Made, asked: ApiRequest) -> Answer:
        return Answer(body=made.builder.message, ticket=made.admission.ticket)


def count_tokens(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    request = schema.parse(schema.CountTokensRequest, asked.body)
    return Answer(body={"input_tokens": translate.count_tokens(request, pipeline.catalog.resolve(request.model))})
