"""The Gemini API's methods, the one place that runs them: generateContent and streamGenerateContent on the one
pipeline (the same prompt rules, backends, scenarios, pacing, rate limits and faults as the other surfaces),
countTokens, embedContent and batchEmbedContents, and the model listing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from llmsim import tokens as tokenizers
from llmsim.chaos.faults import Admission
from llmsim.embeddings import run
from llmsim.errors import APIError
from llmsim.gemini import envelope, models, schema, translate
from llmsim.gemini.events import GeminiBuilder
from llmsim.generation import Delta, Prompt
from llmsim.request import Answer, ApiRequest, SerializedEvent, error_of, int_param
from llmsim.runtime.fairness import fair
from llmsim.shared import compat
from llmsim.surface import Job
from llmsim.timing.pricing import COST_HEADER, format_usd
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface


@dataclass
class Made:
    builder: GeminiBuilder
    events: Iterator[SerializedEvent]
    admission: Admission


@dataclass
class Read:
    request: schema.GenerateContentRequest
    translated: translate.Translated
    model: str


def _profile(pipeline: Pipeline, model: str, method: str) -> Profile:
    try:
        return pipeline.catalog.resolve(model, missing_status=404)
    except APIError as error:
        if error.status == 404 or error.code == "model_not_found":
            raise envelope.not_found(model, method) from None
        raise schema.invalid(error.message, "model") from None


class Generate:
    """generateContent (`stream` False) or streamGenerateContent, as the one template runs them
    (llmsim/orchestrate.py): a GenerateContentResponse, or its chunks (SSE with `?alt=sse`, else a JSON array)."""

    def __init__(self, surface: Surface, stream: bool) -> None:
        self.surface = surface
        self.stream = stream
        self.method = "streamGenerateContent" if stream else "generateContent"

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        model = asked.params.get("model", "")
        request = schema.parse(schema.GenerateContentRequest, asked.body, asked.lenient)
        profile = _profile(pipeline, model, self.method)
        if profile.embedding is not None:
            raise envelope.not_found(model, self.method)
        translated = translate.build_prompt(request, model, profile,
                                            pipeline.seed if asked.seed is None else asked.seed)
        if asked.text_mode:
            translated = replace(translated, prompt=replace(translated.prompt, text_mode=asked.text_mode))
        return Job(translated.prompt, self.stream, Read(request, translated, model))

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None
             ) -> Made:
        read: Read = job.request
        prompt, admission = pipeline.direct_and_admit(self.surface, job.prompt, asked, self.stream, whole,
                                                      admitted)
        translated = replace(read.translated, prompt=prompt)
        builder = GeminiBuilder(translated, read.model, self.stream or admission.stream_fault is not None)
        stream = self.stream

        def deltas(candidate: Prompt) -> Iterator[Delta]:
            made = admission.deltas(pipeline.generate(candidate, asked.speed, runs=True))
            return made if stream else fair(made)  # a long answer takes turns with the worker's other requests

        events = _candidates(builder, _candidate_prompts(prompt, translated.candidates), deltas)
        return Made(builder, admission.events(builder, events), admission)

    def streamed(self, pipeline: Pipeline, made: Made, asked: ApiRequest, together: bool) -> Answer:
        events = fair(made.events)
        headers = compat.headers(asked.warnings)
        if asked.params.get("alt") == "sse":
            return Answer(frames=(f"data: {data}\r\n\r\n" for _, data in events), together=together,
                          ticket=made.admission.ticket, headers=headers)
        return Answer(frames=_array(events), media_type="application/json", together=together,
                      ticket=made.admission.ticket, headers=headers)

    def drained(self, made: Made) -> APIError | None:
        failed = error_of(made.events, made.admission.ticket)
        return None if failed is None else APIError(json.loads(failed)["error"]["message"], status=500,
                                                    type="INTERNAL")

    def answered(self, pipeline: Pipeline, made: Made, asked: ApiRequest) -> Answer:
        response = {k: v for k, v in made.builder.response.items() if k != "id"}
        cost = _cost(made.builder.translated.prompt.profile, made.builder.response)
        return Answer(body=response, ticket=made.admission.ticket,
                      headers={**compat.headers(asked.warnings), **({COST_HEADER: cost} if cost else {})})


def _array(events: Iterator[SerializedEvent]) -> Iterator[str]:
    """The JSON-array stream: `[` the first chunk, then `,` and each next one, then `]`."""
    first = True
    for _, data in events:
        yield ("[" if first else "\r\n,") + data
        first = False
    yield "[]" if first else "]"


def _candidate_prompts(prompt: Prompt, count: int) -> list[Prompt]:
    """One prompt per candidate: candidate i draws from its own seed, so the answers differ yet repeat."""
    if count == 1 or prompt.seed is None:
        return [prompt] * count
    return [replace(prompt, seed=prompt.seed + i) for i in range(count)]


def _candidates(builder: GeminiBuilder, prompts: list[Prompt],
                deltas: Callable[[Prompt], Iterator[Delta]]) -> Iterator[SerializedEvent]:
    for index, prompt in enumerate(prompts):
        with closing(deltas(prompt)) as stream:  # type: ignore[type-var]
            yield from builder.candidate(index, stream)


def _cost(profile: Profile, response: dict[str, Any]) -> str | None:
    usage = response.get("usageMetadata") or {}
    if profile.pricing is None or not usage:
        return None
    output = usage.get("candidatesTokenCount", 0) + usage.get("thoughtsTokenCount", 0)
    return format_usd(profile.pricing.cost({"input_tokens": usage.get("promptTokenCount", 0),
                                            "output_tokens": output}))


def count_tokens(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    model = asked.params.get("model", "")
    request = schema.parse(schema.CountTokensRequest, asked.body, asked.lenient)
    profile = _profile(pipeline, model, "countTokens")
    inner = request.generate_content_request or schema.GenerateContentRequest(contents=request.contents or [])
    if not inner.contents:
        raise schema.invalid("* CountTokensRequest.contents: contents is not specified\n", "contents")
    total = translate.count_tokens(inner, model, profile)
    return Answer(body={"totalTokens": total, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]})


# --- embeddings ----------------------------------------------------------------------------------------------------


class Embed:
    """embedContent (one content's vector) or batchEmbedContents (each request's, in order)."""

    def __init__(self, surface: Surface, batch: bool) -> None:
        self.surface = surface
        self.batch = batch
        self.method = "batchEmbedContents" if batch else "embedContent"

    def __call__(self, pipeline: Pipeline, asked: ApiRequest) -> Answer:
        model = asked.params.get("model", "")
        if not self.batch:
            one = schema.parse(schema.EmbedContentRequest, asked.body, asked.lenient)
            vectors, headers, ticket = self._embed(pipeline, asked, model, [one])
            return _embedded({"embedding": {"values": vectors[0]}}, headers, ticket)
        request = schema.parse(schema.BatchEmbedContentsRequest, asked.body, asked.lenient)
        for i, each in enumerate(request.requests):
            if each.model is not None and each.model.removeprefix("models/") != model:
                raise schema.invalid(f"* BatchEmbedContentsRequest.requests[{i}].model: the model of each request "
                                     f"must be the same as the batch's ({model}).\n", f"requests[{i}].model")
        vectors, headers, ticket = self._embed(pipeline, asked, model, request.requests)
        return _embedded({"embeddings": [{"values": v} for v in vectors]}, headers, ticket)

    def _embed(self, pipeline: Pipeline, asked: ApiRequest, model: str, requests: list[schema.EmbedContentRequest]
               ) -> tuple[list[Any], dict[str, str], Any]:
        profile = _profile(pipeline, model, self.method)
        if profile.embedding is None and profile.owned_by != "mlx":  # a loaded model embeds too
            raise envelope.not_found(model, self.method)
        encoding = tokenizers.encoding(profile.encoding)
        limit = profile.embedding.max_input_tokens if profile.embedding else profile.context_window
        texts, counts = [], []
        for request in requests:
            text = "\n".join(part.text for part in request.content.parts or [] if part.text)
            if request.title:
                text = f"{request.title}\n{text}"
            if not text:
                raise schema.invalid("* EmbedContentRequest.content: content must not be empty\n", "content")
            count = len(encoding.encode(text, disallowed_special=()))
            if count > limit and request.auto_truncate is False:
                raise schema.invalid(f"Request payload size exceeds the limit: the input has {count} tokens, more "
                                     f"than the model's {limit}.", "content")
            texts.append(text)
            counts.append(min(count, limit))
        size = run.size_of(profile)
        wanted = [r.output_dimensionality for r in requests]
        for each in wanted:
            if each is not None and (each < 1 or size and each > size):
                raise schema.invalid(f"* EmbedContentRequest.output_dimensionality: output_dimensionality must be "
                                     f"between 1 and {size or 'the model size'}.\n", "output_dimensionality")
        done = run.run(pipeline, asked, self.surface, model, profile, texts, counts)
        vectors = [run.shortened(vector, size_wanted, normalize=False) for vector, size_wanted in
                   zip(done.vectors, wanted, strict=True)]
        return vectors, {**done.headers, **compat.headers(asked.warnings)}, done.ticket


def _embedded(body: dict[str, Any], headers: dict[str, str], ticket: Any) -> Answer:
    return Answer(json=orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY).decode(), headers=headers,
                  ticket=ticket)


# --- models --------------------------------------------------------------------------------------------------------


def list_models(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    return Answer(body=models.page(pipeline.catalog.listed(), int_param(asked.params, "pageSize", 50, 0, 1000),
                                   asked.params.get("pageToken")))


def get_model(pipeline: Pipeline, asked: ApiRequest) -> Answer:
    model = asked.params.get("model", "")
    profile = pipeline.catalog.get(model)
    if profile is None or profile.id == "default":
        raise APIError(f"Model is not found: models/{model}", status=404, type="NOT_FOUND")
    return Answer(body=models.model_info(model, profile))
