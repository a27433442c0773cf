"""POST /v1/embeddings' request, as the openai SDK's `EmbeddingCreateParams` names it: strict and closed like the
Responses schema, so errors read as the live API's (llmsim/responses/schema.py parses it)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from llmsim.responses.schema import Strict

MAX_INPUTS = 2048  # texts (or token arrays) in one request


class EmbeddingsRequest(Strict):
    model_config = ConfigDict(defer_build=True)  # built at the first embeddings request
    input: str | list[str] | list[int] | list[list[int]]
    model: str = Field(min_length=1)
    dimensions: int | None = Field(None, ge=1)
    encoding_format: Literal["float", "base64"] = "float"
    user: str | None = None
