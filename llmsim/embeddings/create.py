"""POST /v1/embeddings: the texts (or token arrays) as vectors, with OpenAI's errors and exact `usage`; relayed by
the proxy and replay backends like the other endpoints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from llmsim import tokens as tokenizers
from llmsim.embeddings import run
from llmsim.embeddings.schema import MAX_INPUTS, EmbeddingsRequest
from llmsim.errors import APIError
from llmsim.request import Answer, ApiRequest
from llmsim.responses import schema
from llmsim.shared import compat
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface

MAX_REQUEST_TOKENS = 300_000  # all inputs of one request together
INVALID_INPUT = "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."


class Create:
    """POST /embeddings, an operation the relaying backends answer on the relay road (llmsim/surface.py `Route`)."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    def __call__(self, pipeline: Pipeline, asked: ApiRequest) -> Answer:
        return create(pipeline, asked, self.surface)


def create(pipeline: Pipeline, asked: ApiRequest, surface: Surface) -> Answer:
    given = asked.body.get("input", "") if isinstance(asked.body, dict) else ""
    if not isinstance(given, (str, list)):  # named as the API names it, not by the schema's union branches
        shown = "null" if given is None else "an object" if isinstance(given, dict) else \
            "a boolean" if isinstance(given, bool) else "a number"
        raise APIError(f"Invalid type for 'input': expected a string or an array, but got {shown} instead.",
                       param="input", code="invalid_type")
    request = schema.parse(EmbeddingsRequest, asked.body, asked.lenient, refused={})
    profile = pipeline.catalog.resolve(request.model)
    size = _dimensions(request, profile)
    texts, counts = _inputs(request, profile)
    done = run.run(pipeline, asked, surface, request.model, profile, texts, counts)
    vectors = [run.shortened(vector, size, normalize=True) for vector in done.vectors]
    data = [{"object": "embedding", "index": i,
             "embedding": run.as_base64(v) if request.encoding_format == "base64" else v}
            for i, v in enumerate(vectors)]
    total = sum(done.tokens)
    body = {"object": "list", "data": data, "model": request.model,
            "usage": {"prompt_tokens": total, "total_tokens": total}}
    text = orjson.dumps(body, option=orjson.OPT_SERIALIZE_NUMPY).decode()
    return Answer(json=text, headers={**done.headers, **compat.headers(asked.warnings)}, ticket=done.ticket)


def _dimensions(request: EmbeddingsRequest, profile: Profile) -> int | None:
    if request.dimensions is None:
        return None
    spec = profile.embedding
    if spec is not None and not spec.shortens:
        raise APIError("This model does not support specifying dimensions.", param=None, code=None)
    full = run.size_of(profile)
    if full and request.dimensions > full:
        raise APIError(f"Invalid value for 'dimensions' = {request.dimensions}. Must be less than or equal to "
                       f"{full}.", param="dimensions", code="invalid_value")
    return request.dimensions


def _inputs(request: EmbeddingsRequest, profile: Profile) -> tuple[list[str], list[int]]:
    """The texts to embed and each one's tokens: a string, strings, a token array or token arrays."""
    given: Any = request.input
    encoding = tokenizers.encoding(profile.encoding)
    if isinstance(given, str) or given and isinstance(given[0], int):
        given = [given]
    if not given or len(given) > MAX_INPUTS or any(len(item) == 0 for item in given):
        raise APIError(INVALID_INPUT, param=None, code=None)
    limit = profile.embedding.max_input_tokens if profile.embedding else profile.context_window
    texts: list[str] = []
    counts: list[int] = []
    for item in given:
        if isinstance(item, str):
            count = len(encoding.encode(item, disallowed_special=()))
            text = item
        else:
            count = len(item)
            if count <= limit:
                try:
                    text = encoding.decode(item)
                except (KeyError, ValueError, OverflowError):  # an id the encoding does not have
                    raise APIError(INVALID_INPUT, param=None, code=None) from None
        if count > limit:
            raise APIError(f"This model's maximum context length is {limit} tokens, however you requested {count} "
                           f"tokens ({count} in your prompt; 0 for the completion). Please reduce your prompt; or "
                           "completion length.", param=None, code=None)
        texts.append(text)
        counts.append(count)
    if sum(counts) > MAX_REQUEST_TOKENS:
        raise APIError(f"Requested {sum(counts)} tokens, max {MAX_REQUEST_TOKENS} tokens per request",
                       param=None, code="max_tokens_per_request")
    return texts, counts
