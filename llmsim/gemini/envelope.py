"""Errors as Google sends them, from the OpenAI-shaped ones the rest of LLMSim raises:
`{"error": {"code", "message", "status", "details"}}`, with a 400's field in a `BadRequest` and a 429's wait in a
`RetryInfo` (which google-genai's retry reads)."""

from __future__ import annotations

from typing import Any

from llmsim.errors import APIError

STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
          405: "INVALID_ARGUMENT", 409: "ABORTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT",
          429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED", 502: "UNAVAILABLE",
          503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
STATUS_CODES = {name: code for code, name in reversed(STATUS.items())} | {"FAILED_PRECONDITION": 400}
TYPE = "type.googleapis.com/google.rpc."
RATE_LIMIT_DOCS = "https://ai.google.dev/gemini-api/docs/rate-limits"
# LLMSim's default words (OpenAI's) → Google's; a fault's own message is kept.
WORDS = {
    500: "An internal error has occurred. Please retry or report in "
         "https://developers.generativeai.google/guide/troubleshooting",
    502: "The service is currently unavailable.",
    503: "The model is overloaded. Please try again later.",
    504: "Deadline expired before operation could complete.",
}
OPENAI_WORDS = ("The server had an error", "The server is overloaded", "Bad gateway", "Gateway timeout",
                "Slow Down", "platform.openai.com", "openai", "Incorrect API key", "Country, region")


MISSING_KEY = "You didn't provide an API key"  # LLMSim's words for a request with no key (llmsim/api/http.py)


def status(error: APIError) -> int:
    """Google's status code: a request with no key is refused (403), a wrong key is an invalid argument (400)."""
    if error.status == 401:
        return 403 if error.message.startswith(MISSING_KEY) else 400
    return error.status


def status_name(error: APIError) -> str:
    if error.type in STATUS_CODES:
        return error.type
    code = status(error)
    return STATUS.get(code, "INTERNAL" if code >= 500 else "INVALID_ARGUMENT")


def body(error: APIError, model: str | None = None) -> dict[str, Any]:
    name = status_name(error)
    return {"error": {"code": status(error), "message": message(error, model), "status": name,
                      "details": details(error, name, model)}}


def message(error: APIError, model: str | None) -> str:
    said = error.message
    if not any(words in said for words in OPENAI_WORDS):
        return said
    if error.status == 429:
        if error.type == "insufficient_quota":
            return "You exceeded your current quota, please check your plan and billing details."
        return (f"You exceeded your current quota, please check your plan and billing details. For more information "
                f"on this error, head to: {RATE_LIMIT_DOCS}.\n* Quota exceeded for metric: "
                f"generativelanguage.googleapis.com/generate_content_requests, limit: {_limit(error)}, model: "
                f"{model or 'unknown'}\nPlease retry in {_delay(error)}.")
    if error.status == 401 and error.message.startswith(MISSING_KEY):
        return ("Method doesn't allow unregistered callers (callers without established identity). Please use API "
                "Key or other form of API consumer identity to call this API.")
    if error.status == 401 or error.code == "invalid_api_key":
        return "API key not valid. Please pass a valid API key."
    if error.status == 403:
        return "User location is not supported for the API use."
    return WORDS.get(error.status, said)


def _delay(error: APIError) -> str:
    ms = error.headers.get("retry-after-ms")
    if ms is not None:
        try:
            return f"{float(ms) / 1000:g}s"
        except ValueError:
            pass
    return f"{error.headers.get('retry-after', '1')}s"


def _limit(error: APIError) -> str:
    return error.headers.get("x-ratelimit-limit-requests", "0")


def details(error: APIError, status: str, model: str | None) -> list[dict[str, Any]]:
    if error.status == 401 and status == "INVALID_ARGUMENT":
        return [{"@type": TYPE + "ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                 "metadata": {"service": "generativelanguage.googleapis.com"}}]
    if error.status == 429:
        return [{"@type": TYPE + "QuotaFailure", "violations": [{
                    "quotaMetric": "generativelanguage.googleapis.com/generate_content_requests",
                    "quotaId": "GenerateRequestsPerMinutePerProjectPerModel",
                    "quotaDimensions": {"location": "global", **({"model": model} if model else {})},
                    "quotaValue": _limit(error)}]},
                {"@type": TYPE + "Help", "links": [{"description": "Learn more about Gemini API quotas",
                                                    "url": RATE_LIMIT_DOCS}]},
                {"@type": TYPE + "RetryInfo", "retryDelay": _delay(error)}]
    if status == "INVALID_ARGUMENT" and error.param:
        return [{"@type": TYPE + "BadRequest", "fieldViolations": [{"field": error.param,
                                                                    "description": error.message}]}]
    return []


def not_found(model: str, method: str) -> APIError:
    return APIError(f"models/{model} is not found for API version v1beta, or is not supported for {method}. Call "
                    "ListModels to see the list of available models and their supported methods.", status=404,
                    type="NOT_FOUND")

