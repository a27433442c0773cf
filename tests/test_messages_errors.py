"""Errors under the Anthropic prefixes as the live API sends them, through the anthropic SDK where it decides
something (retry or not, which exception): an unknown model under --strict-models is a 404 `not_found_error`;
404 and 405 use Anthropic's envelope; every error carries `request-id`; a spent balance is a 400 the SDK does not
retry."""

from __future__ import annotations

from typing import Any

import anthropic
import httpx
import pytest

MODEL = "claude-sonnet-4-6"
HELLO: Any = [{"role": "user", "content": "Hello"}]
BODY = {"model": MODEL, "max_tokens": 50, "messages": HELLO}


def anthropic_error(answer: httpx.Response, status: int, kind: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert body["type"] == "error" and body["error"]["type"] == kind, body
    assert body["request_id"].startswith("req_") and answer.headers["request-id"] == body["request_id"]
    return body


def test_an_unknown_model_is_a_404_under_strict_models(shared_server: Any) -> None:
    server = shared_server("--strict-models")
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as caught:
        client.messages.create(model="claude-imaginary-9", max_tokens=50, messages=HELLO)
    assert caught.value.body == {"type": "error", "error": {"type": "not_found_error",
                                                           "message": "model: claude-imaginary-9"},
                                 "request_id": caught.value.request_id}
    with pytest.raises(anthropic.NotFoundError):
        client.messages.count_tokens(model="claude-imaginary-9", messages=HELLO)
    assert client.messages.create(model=MODEL, max_tokens=50, messages=HELLO).stop_reason


def test_404_and_405_under_the_anthropic_prefixes_use_its_envelope(shared_server: Any) -> None:
    server = shared_server()
    anthropic_error(httpx.get(f"{server.url}/anthropic/v1/nowhere"), 404, "not_found_error")
    anthropic_error(httpx.get(f"{server.url}/v1/messages"), 405, "invalid_request_error")
    anthropic_error(httpx.put(f"{server.url}/anthropic/v1/messages/count_tokens", json=BODY), 405,
                    "invalid_request_error")
    openai = httpx.get(f"{server.url}/v1/nowhere")  # the shared /v1 prefix stays OpenAI's outside /v1/messages
    assert openai.status_code == 404 and set(openai.json()["error"]) == {"message", "type", "param", "code"}


def test_every_error_has_a_request_id(shared_server: Any) -> None:
    server = shared_server("--api-key", "sk-ant-right")
    for prefix in ("/v1", "/anthropic/v1"):
        anthropic_error(httpx.post(f"{server.url}{prefix}/messages", json=BODY), 401, "authentication_error")
        anthropic_error(httpx.post(f"{server.url}{prefix}/messages", json=BODY, headers={"x-api-key": "wrong"}),
                        401, "authentication_error")
        anthropic_error(httpx.get(f"{server.url}{prefix}/messages"), 401, "authentication_error")
        anthropic_error(httpx.post(f"{server.url}{prefix}/messages", json={"model": MODEL},
                                   headers={"x-api-key": "sk-ant-right"}), 400, "invalid_request_error")


def test_a_spent_balance_is_a_400_the_sdk_does_not_retry(shared_server: Any) -> None:
    server = shared_server()
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=3)
    before = len(httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"])
    for stream in (False, True):
        with pytest.raises(anthropic.BadRequestError) as caught:
            client.messages.create(model=MODEL, max_tokens=50, messages=HELLO, stream=stream,  # type: ignore[call-overload]
                                   extra_headers={"X-LLMSim-Fault": "insufficient_quota"})
        error = caught.value
        assert error.status_code == 400 and "retry-after" not in error.response.headers
        assert error.body == {"type": "error", "request_id": error.request_id, "error": {
            "type": "invalid_request_error", "message": "Your credit balance is too low to access the Anthropic "
            "API. Please go to Plans & Billing to upgrade or purchase credits."}}
    assert len(httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"]) == before + 2  # asked once each
