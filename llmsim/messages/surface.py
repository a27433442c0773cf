"""Anthropic's Messages API as a surface (llmsim/surface.py): POST /v1/messages on the one template and
/v1/messages/count_tokens, also under /anthropic/v1; errors in Anthropic's envelope with its `request-id` header,
and rate-limit headers under Anthropic's names too (llmsim/messages/envelope.py)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from llmsim.errors import APIError
from llmsim.messages import envelope, models
from llmsim.messages.create import Create, count_tokens
from llmsim.request import int_param
from llmsim.surface import Headers, HttpFailure, Route, Surface
from llmsim.wire import dumps

if TYPE_CHECKING:
    from llmsim.timing.profiles import Catalog, Profile

INTERNAL_HEADERS = envelope.internal_headers()


class Messages(Surface):
    name = "messages"
    path = "messages"
    prefixes = ("/v1", "/anthropic/v1")
    exclusive_prefixes = ("/anthropic/v1",)
    lean = False  # its answers carry Anthropic's headers, which only the app's path adds
    directional = True  # Anthropic reports input and output tokens' limits apart
    upstream_auth = "x-api-key"
    upstream_headers = {"anthropic-version": "2023-06-01"}  # the Messages API's version header (its only one)
    match = ("model", "system", "messages", "tools", "tool_choice", "thinking")
    listing_header = "anthropic-version"  # every anthropic SDK sends it: /v1/models answers in its shapes

    def routes(self) -> Sequence[Route]:
        return (Route("POST", "/messages", Create(self)), Route("POST", "/messages/count_tokens", count_tokens))

    def envelope(self, error: APIError, request_id: str) -> tuple[Any, int]:
        return envelope.body(error, request_id), envelope.status(error)

    def http_error(self, failure: HttpFailure) -> APIError:
        return APIError(failure.description, status=failure.status)

    def answer_headers(self, headers: Headers, request_id: str) -> None:
        headers["request-id"] = request_id
        for name, value in envelope.ratelimit_headers(dict(headers.items())).items():
            headers.setdefault(name, value)
        for name in INTERNAL_HEADERS:
            headers.pop(name, None)

    def relayed_error(self, code: str, message: str, param: str | None, sequence: int) -> dict[str, Any]:
        return {"type": "error", "error": {"type": "api_error", "message": message}}

    def relayed_dumps(self, event: dict[str, Any]) -> str:
        return dumps(event)

    def list_models(self, catalog: Catalog, query: Mapping[str, str]) -> Any:
        return models.page(catalog.listed(), int_param(query, "limit", 20, 1, 1000), query.get("after_id"),
                           query.get("before_id"))

    def model_info(self, name: str, profile: Profile) -> Any:
        return models.model_info(name, profile)


MESSAGES = Messages()
