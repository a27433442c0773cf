"""One embeddings request's way through, for any surface: scenarios, rate limits and faults as for a generating
request (the texts are its input tokens), then the backend's vectors (llmsim/generation.py `Embedder`), settled
and metered with their usage."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from llmsim.chaos.faults import Admission
from llmsim.errors import APIError
from llmsim.generation import Embedded, Embedder, EmbedRequest, Finish, Prompt, Turn, Usage
from llmsim.request import ApiRequest, Ticket, attach
from llmsim.timing.pricing import COST_HEADER, format_usd
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface

SCENARIO_CHARS = 4096  # of the texts, what a scenario's rules match against


@dataclass
class Vectors:
    """The vectors (numpy float32), each text's tokens, and what the answer carries."""

    vectors: list[Any]
    tokens: list[int]
    ticket: Ticket | None
    headers: dict[str, str]


def run(pipeline: Pipeline, asked: ApiRequest, surface: Surface, model: str, profile: Profile, texts: list[str],
        tokens: list[int], admitted: Admission | None = None) -> Vectors:
    """Admit the request, then embed `texts` (`tokens`: each one's count, as the surface reckons it)."""
    said = "\n".join(texts)[:SCENARIO_CHARS]
    prompt = Prompt(model=model, profile=profile, turns=[Turn("user", said)], input_tokens=sum(tokens),
                    max_output_tokens=0)
    seed = pipeline.seed if asked.seed is None else asked.seed
    _, admission = pipeline.direct_and_admit(surface, prompt, asked, False, admitted=admitted)
    made: list[Embedded] = []

    def deltas() -> Iterator[Finish]:
        backend = pipeline.backend
        if not isinstance(backend, Embedder):
            raise APIError(f"The {backend.name} backend makes no embeddings.", status=400, code="unsupported_model")
        made.append(backend.embed(EmbedRequest(model, profile, tuple(texts), seed)))
        counted = made[0].tokens or tokens
        yield Finish("stop", Usage(sum(counted), 0))

    try:
        if admission.stream_fault is not None:
            admission.stream_fault.answer_body()
        for _ in admission.deltas(deltas()):
            pass
    except BaseException as error:
        attach(error, admission.ticket)
        raise
    counted = made[0].tokens or tokens
    headers = {}
    if profile.pricing is not None:
        headers[COST_HEADER] = format_usd(sum(counted) * profile.pricing.input / 1_000_000)
    return Vectors(made[0].vectors, counted, admission.ticket, headers)


def size_of(profile: Profile) -> int:
    """The model's own vector size: its profile's, else the backend's (a loaded model's hidden size)."""
    return profile.embedding.dimensions if profile.embedding is not None else 0


def shortened(vector: Any, size: int | None, normalize: bool) -> Any:
    """The first `size` values (the `dimensions` a client asked for), a unit vector again when `normalize`
    (OpenAI's text-embedding-3 do; Gemini leaves a shortened vector as it is, below its full size)."""
    if size is None or size >= len(vector):
        return vector
    head = vector[:size]
    if not normalize:
        return head
    import numpy as np

    norm = float(np.linalg.norm(head)) or 1.0
    return (head / norm).astype(np.float32)


def as_base64(vector: Any) -> str:
    """The vector's float32 values, little-endian, as base64: OpenAI's `encoding_format: base64`."""
    import numpy as np

    return base64.b64encode(np.asarray(vector, dtype="<f4").tobytes()).decode()
