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
from llmsim.gemini.events import GeminiBuilder, event_dumps
from llmsim.generation import Delta, Prompt
from llmsim.request import Answer, ApiRequest, SerializedEvent, attach, error_of
from llmsim.responses import compat
from llmsim.runtime.fairness import fair
from llmsim.timing.pricing import COST_HEADER, format_usd
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline

ENDPOINT = "gemini.generateContent"
EMBED_ENDPOINT = "gemini.embedContent"


@dataclass
class Made:
    builder: GeminiBuilder
    events: Iterator[SerializedEvent]
    admission: Admission


def _profile(pipeline: Pipeline, model: str, version: str, method: str) -> Profile:
    try:
        return pipeline.catalog.resolve(model, missing_status=404)
    except APIError as error:
        if error.status == 404 or error.code == "model_not_found":
            raise envelope.not_found(model, version, method) from None
        raise schema.invalid(error.message, "model") from None


def generate(pipeline: Pipeline, asked: ApiRequest, model: str, stream: bool, version: str = "v1beta") -> Answer:
    """generateContent (`stream` False) or streamGenerateContent: a GenerateContentResponse, or its chunks."""
    request = schema.parse(schema.GenerateContentRequest, asked.body, asked.lenient)
    method = "streamGenerateContent" if stream else "generateContent"
    profile = _profile(pipeline, model, version, method)
    if profile.embedding is not None:
        raise envelope.not_found(model, version, method)
    translated = translate.build_prompt(request, model, profile,
                                        pipeline.seed if asked.seed is None else asked.seed)
    if asked.text_mode:
        translated = replace(translated, prompt=replace(translated.prompt, text_mode=asked.text_mode))
    waits = pipeline.waits(translated.prompt, asked.speed)
    whole = not stream and not waits
    if whole:
        pipeline.hold()

    def make() -> Made:
        return _made(pipeline, asked, translated, model, stream, whole)

    made = make()
    headers = compat.headers(asked.warnings)
    if stream:
        return Answer(events=fair(made.events), together=not waits and made.admission.stream_fault is None,
                      ticket=made.admission.ticket, headers=headers,
                      trailer=lambda: _cost(profile, made.builder.response))
    try:
        made, failed = pipeline.finish(made, make, lambda made: error_of(made.events, made.admission.ticket))
    except BaseException as unavailable:
        attach(unavailable, made.admission.ticket)
        raise
    if failed is not None:
        error = APIError(json.loads(failed)["error"]["message"], status=500, type="INTERNAL")
        attach(error, made.admission.ticket)
        raise error
    response = dict(made.builder.response)
    del response["id"]
    cost = _cost(profile, made.builder.response)
    return Answer(body=response, ticket=made.admission.ticket,
                  headers={**headers, **({COST_HEADER: cost} if cost else {})})


def _made(pipeline: Pipeline, asked: ApiRequest, translated: translate.Translated, model: str, stream: bool,
          whole: bool) -> Made:
    prompt, admission = pipeline.direct_and_admit(ENDPOINT, translated.prompt, asked, stream, whole)
    translated = replace(translated, prompt=prompt)
    builder = GeminiBuilder(translated, model, stream or admission.stream_fault is not None)

    def deltas(candidate: Prompt) -> Iterator[Delta]:
        made = admission.deltas(pipeline.generate(candidate, asked.speed, runs=True))
        return made if stream else fair(made)  # a long answer takes turns with the worker's other requests

    events = _candidates(builder, _candidate_prompts(prompt, translated.candidates), deltas)
    return Made(builder, admission.events(builder, events, event_dumps), admission)  # type: ignore[arg-type]


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


def count_tokens(pipeline: Pipeline, asked: ApiRequest, model: str, version: str = "v1beta") -> dict[str, Any]:
    request = schema.parse(schema.CountTokensRequest, asked.body, asked.lenient)
    profile = _profile(pipeline, model, version, "countTokens")
    inner = request.generate_content_request or schema.GenerateContentRequest(contents=request.contents or [])
    if not inner.contents:
        raise schema.invalid("* CountTokensRequest.contents: contents is not specified\n", "contents")
    total = translate.count_tokens(inner, model, profile)
    return {"totalTokens": total, "promptTokensDetails": [{"modality": "TEXT", "tokenCount": total}]}


# --- embeddings ----------------------------------------------------------------------------------------------------


def embed(pipeline: Pipeline, asked: ApiRequest, model: str, version: str = "v1beta") -> Answer:
    """embedContent: one content's vector."""
    request = schema.parse(schema.EmbedContentRequest, asked.body, asked.lenient)
    vectors, headers, ticket = _embed(pipeline, asked, model, version, [request], "embedContent")
    return _embedded({"embedding": {"values": vectors[0]}}, headers, ticket)


def batch_embed(pipeline: Pipeline, asked: ApiRequest, model: str, version: str = "v1beta") -> Answer:
    """batchEmbedContents: each request's vector, in order (each request names this model)."""
    request = schema.parse(schema.BatchEmbedContentsRequest, asked.body, asked.lenient)
    for i, each in enumerate(request.requests):
        if each.model is not None and each.model.removeprefix("models/") != model:
            raise schema.invalid(f"* BatchEmbedContentsRequest.requests[{i}].model: the model of each request must "
                                 f"be the same as the batch's ({model}).\n", f"requests[{i}].model")
    vectors, headers, ticket = _embed(pipeline, asked, model, version, request.requests, "batchEmbedContents")
    return _embedded({"embeddings": [{"values": v} for v in vectors]}, headers, ticket)


def _embedded(body: dict[str, Any], headers: dict[str, str], ticket: Any) -> Answer:
    return Answer(json=orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY).decode(), headers=headers,
                  ticket=ticket)


def _embed(pipeline: Pipeline, asked: ApiRequest, model: str, version: str,
           requests: list[schema.EmbedContentRequest], method: str) -> tuple[list[Any], dict[str, str], Any]:
    profile = _profile(pipeline, model, version, method)
    if profile.embedding is None and profile.owned_by != "mlx":  # a loaded model embeds too
        raise envelope.not_found(model, version, method)
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
            raise schema.invalid(f"Request payload size exceeds the limit: the input has {count} tokens, more than "
                                 f"the model's {limit}.", "content")
        texts.append(text)
        counts.append(min(count, limit))
    size = run.size_of(profile)
    wanted = [r.output_dimensionality for r in requests]
    for each in wanted:
        if each is not None and (each < 1 or size and each > size):
            raise schema.invalid(f"* EmbedContentRequest.output_dimensionality: output_dimensionality must be "
                                 f"between 1 and {size or 'the model size'}.\n", "output_dimensionality")
    done = run.run(pipeline, asked, EMBED_ENDPOINT, model, profile, texts, counts)
    vectors = [run.shortened(vector, size_wanted, normalize=False) for vector, size_wanted in
               zip(done.vectors, wanted, strict=True)]
    return vectors, {**done.headers, **compat.headers(asked.warnings)}, done.ticket


# --- models --------------------------------------------------------------------------------------------------------


def list_models(pipeline: Pipeline, page_size: int, page_token: str | None) -> dict[str, Any]:
    return models.page(pipeline.catalog.listed(), page_size, page_token)


def get_model(pipeline: Pipeline, model: str, version: str = "v1beta") -> dict[str, Any]:
    profile = pipeline.catalog.get(model)
    if profile is None or profile.id == "default":
        raise APIError(f"Model is not found: models/{model} for api version {version}", status=404,
                       type="NOT_FOUND")
    return models.model_info(model, profile)
