"""Google's Gemini API as a surface (llmsim/surface.py): `models/{model}:generateContent` and
`:streamGenerateContent` on the one template, `:countTokens`, `:embedContent`, `:batchEmbedContents` and the model
listing, under /v1beta, /v1 (google-genai's default) and both under /gemini; keys from `x-goog-api-key` or `?key=`;
errors in Google's envelope (llmsim/gemini/envelope.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from llmsim.errors import APIError
from llmsim.gemini import envelope, models
from llmsim.gemini.create import Embed, Generate, count_tokens, get_model, list_models
from llmsim.gemini.events import event_dumps
from llmsim.request import int_param
from llmsim.surface import Headers, HttpFailure, Outline, Route, Surface

if TYPE_CHECKING:
    from llmsim.request import ApiRequest
    from llmsim.timing.profiles import Catalog, Profile

LISTED = ("/v1beta", "/gemini/v1beta", "/gemini/v1")  # GET /v1/models is OpenAI's, unless google-genai asks
KEY_HEADER = "x-goog-api-key"


class Gemini(Surface):
    name = "gemini"
    path = "models"  # its routes' first part (each relayed request goes to its own `models/{model}:{method}`)
    prefixes = ("/v1beta", "/v1", "/gemini/v1beta", "/gemini/v1")
    exclusive_prefixes = ("/v1beta", "/gemini")
    named_events = False  # its SSE frames are bare `data:` lines
    lean = False
    match = ("contents", "systemInstruction", "tools", "toolConfig", "generationConfig")
    listing_header = KEY_HEADER  # google-genai lists models at /v1/models, with its key header
    upstream_auth = KEY_HEADER
    usage_key = "usageMetadata"
    token_marks = (b'"text"', b'"finishReason"')  # a chunk with text; the last one's (empty) text is no token

    def routes(self) -> Sequence[Route]:
        model, upstream = "/models/<model>", "models/{model}"  # a relayed request goes to its own model's method
        return (Route("POST", f"{model}:generateContent", Generate(self, stream=False), stream=False,
                      upstream=f"{upstream}:generateContent"),
                Route("POST", f"{model}:streamGenerateContent", Generate(self, stream=True), stream=True,
                      upstream=f"{upstream}:streamGenerateContent?alt=sse"),  # relayed as SSE, whichever asked
                Route("POST", f"{model}:countTokens", count_tokens, relayed=True, stream=False,
                      upstream=f"{upstream}:countTokens"),
                Route("POST", f"{model}:embedContent", Embed(self, batch=False), relayed=True, stream=False,
                      upstream=f"{upstream}:embedContent"),
                Route("POST", f"{model}:batchEmbedContents", Embed(self, batch=True), relayed=True, stream=False,
                      upstream=f"{upstream}:batchEmbedContents"),
                Route("GET", "/models", list_models, prefixes=LISTED),
                Route("GET", "/models/<model>", get_model, prefixes=LISTED))

    def api_key(self, headers: Headers, query: Mapping[str, str]) -> str | None:
        return headers.get(KEY_HEADER) or query.get("key") or super().api_key(headers, query)

    def outline(self, asked: ApiRequest, route: Route | None = None) -> Outline:
        """The model and the stream flag from the URL (the route's), the input and limit by Gemini's names."""
        found = super().outline(asked, route)
        body = asked.body if isinstance(asked.body, dict) else {}
        config = body.get("generationConfig") if isinstance(body.get("generationConfig"), dict) else {}
        limit = config.get("maxOutputTokens") if config else None
        return replace(found, said=[body[name] for name in ("systemInstruction", "contents") if body.get(name)],
                       limit=limit if isinstance(limit, int) else None)

    def claims(self, endpoint: str) -> bool:
        return endpoint.startswith("models/")

    def relayed_tokens(self, usage: dict[str, Any]) -> tuple[int, int]:
        output = int(usage.get("candidatesTokenCount") or 0) + int(usage.get("thoughtsTokenCount") or 0)
        return int(usage.get("promptTokenCount") or 0), output

    def envelope(self, error: APIError, request_id: str) -> tuple[Any, int]:
        return envelope.body(error), envelope.status(error)

    def http_error(self, failure: HttpFailure) -> APIError:
        if failure.status in (404, 405):
            return APIError(f"Invalid URL ({failure.method} {failure.path})", status=404, type="NOT_FOUND")
        return APIError(failure.description, status=failure.status)

    def overloaded(self, message: str | None = None, retry_after: float | None = None) -> APIError:
        error = super().overloaded(message, retry_after)
        error.type = "UNAVAILABLE"
        return error

    def relayed_error(self, code: str, message: str, param: str | None, sequence: int) -> dict[str, Any]:
        return {"type": "error", **envelope.body(APIError(message, status=500, type="INTERNAL"))}

    def relayed_dumps(self, event: dict[str, Any]) -> str:
        return event_dumps(event)

    def list_models(self, catalog: Catalog, query: Mapping[str, str]) -> Any:
        return models.page(catalog.listed(), int_param(query, "pageSize", 50, 0, 1000), query.get("pageToken"))

    def model_info(self, name: str, profile: Profile) -> Any:
        return models.model_info(name, profile)


GEMINI = Gemini()
