"""POST /v1/messages: the same prompt rules, backends, scenarios, pacing, rate limits and faults as /responses
and /chat/completions, on the one template (llmsim/orchestrate.py); and its token count."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llmsim.chaos.faults import Admission
from llmsim.errors import APIError
from llmsim.generation import Delta, Finish, Usage
from llmsim.messages import cache, files, schema, translate
from llmsim.messages.events import MessageBuilder
from llmsim.request import Answer, ApiRequest, SerializedEvent, error_of
from llmsim.runtime.fairness import fair
from llmsim.shared import compat
from llmsim.store.objects import ANTHROPIC_FILE
from llmsim.surface import Job

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface
    from llmsim.timing.profiles import Profile


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
        request = schema.parse(schema.CreateRequest, asked.body, asked.lenient)
        _read_files(pipeline, request, asked.owner)
        profile = _profile(pipeline, request.model)
        translated = translate.build_prompt(request, profile, pipeline.seed if asked.seed is None else asked.seed,
                                            asked.owner, pipeline.kept.setdefault(cache.KEPT, {}))
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
        quiet = request.max_tokens == 0 or request.compaction is not None
        deltas = admission.deltas(_nothing(prompt.input_tokens) if quiet else
                                  pipeline.generate(prompt, asked.speed, runs=True, key=asked.key))
        if not request.stream:
            deltas = fair(deltas)  # a long answer takes turns with the worker's other requests
        return Made(builder, admission.events(builder, builder.run(deltas)), admission)

    def streamed(self, pipeline: Pipeline, made: Made, asked: ApiRequest, together: bool) -> Answer:
        return Answer(events=fair(made.events), together=together, ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))

    def drained(self, made: Made) -> APIError | None:
        failed = error_of(made.events, made.admission.ticket)
        return None if failed is None else APIError(json.loads(failed)["error"]["message"], status=500,
                                                    type="api_error")

    def answered(self, pipeline: Pipeline, made: Made, asked: ApiRequest) -> Answer:
        return Answer(body=made.builder.message, ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))


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
    request = schema.parse(schema.CountTokensRequest, asked.body, asked.lenient)
    _read_files(pipeline, request, asked.owner)
    count = translate.count_tokens(request, _profile(pipeline, request.model))
    return Answer(body={"input_tokens": count}, headers=compat.headers(asked.warnings))


def _read_files(pipeline: Pipeline, request: schema.CountTokensRequest, owner: str) -> None:
    """A `document` or `image` block naming an uploaded file (llmsim/jobs/files.py) reads it, in `owner`'s scope."""
    if pipeline.files is not None:
        files.read(request, functools.partial(pipeline.files, ANTHROPIC_FILE, owner))
