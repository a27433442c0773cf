"""The Messages API's transport against a real server, raw HTTP: what a client library hides (ping events, event
lines), the /anthropic prefix, x-api-key auth and its envelope, bad bodies, and the metrics' endpoint label."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx

from llmsim.testing import ServerProcess

BODY = {"model": "claude-sonnet-4-6", "max_tokens": 100, "messages": [{"role": "user", "content": "Hello"}]}
# One server for the RPM test and the TPM one (a start costs a core 1.5 s): each sends its own API key, so each has
# buckets of its own, and neither reads the other's limit.
RPM_AND_TPM = ("--rpm", "2", "--tpm", "5000")
# And one for the API key's test and the ITPM/OTPM one: the keys are the tests' own, and the key's test sends two
# requests that the limits let through.
KEYED_AND_LIMITED = ("--api-key", "sk-ant-right,itpm-otpm-key,sk-openai", "--itpm", "50000")
OTPM = {"LLMSIM_OTPM": "600"}
HEADERS = {"anthropic-version": "2023-06-01", "anthropic-beta": "interleaved-thinking-2025-05-14"}


def events(text: str) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for frame in text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in frame.splitlines())
        out.append((lines["event"], json.loads(lines["data"])))
    return out


def test_stream_frames_name_their_events_and_ping(server: ServerProcess) -> None:
    answer = httpx.post(f"{server.url}/v1/messages", json={**BODY, "stream": True}, headers=HEADERS)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
    stream = events(answer.text)
    kinds = [kind for kind, _ in stream]
    assert kinds[:3] == ["message_start", "ping", "content_block_start"] and kinds[-1] == "message_stop"
    assert all(data["type"] == kind for kind, data in stream)
    start = stream[0][1]["message"]
    assert start["content"] == [] and start["stop_reason"] is None and start["usage"]["input_tokens"] > 0
    text = "".join(data["delta"]["text"] for kind, data in stream if kind == "content_block_delta")
    assert text and answer.headers["request-id"].startswith("req_")


def test_anthropic_prefix_and_count_tokens(server: ServerProcess) -> None:
    made = httpx.post(f"{server.url}/anthropic/v1/messages", json=BODY, headers=HEADERS).json()
    counted = httpx.post(f"{server.url}/anthropic/v1/messages/count_tokens",
                         json={k: v for k, v in BODY.items() if k != "max_tokens"}, headers=HEADERS).json()
    assert made["type"] == "message" and counted == {"input_tokens": made["usage"]["input_tokens"]}


def test_api_key_by_x_api_key_or_bearer(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*KEYED_AND_LIMITED, env=OTPM)
    url = f"{server.url}/v1/messages"
    missing = httpx.post(url, json=BODY, headers=HEADERS)
    wrong = httpx.post(url, json=BODY, headers={**HEADERS, "x-api-key": "sk-ant-wrong"})
    assert missing.status_code == wrong.status_code == 401
    assert wrong.json()["error"]["type"] == "authentication_error"
    assert wrong.json()["request_id"] == wrong.headers["request-id"]
    assert httpx.post(url, json=BODY, headers={**HEADERS, "x-api-key": "sk-ant-right"}).status_code == 200
    assert httpx.post(url, json=BODY, headers={"Authorization": "Bearer sk-ant-right"}).status_code == 200


def test_bad_bodies_get_the_anthropic_envelope(server: ServerProcess) -> None:
    url = f"{server.url}/v1/messages"
    cases = [
        ({k: v for k, v in BODY.items() if k != "max_tokens"}, "max_tokens: Field required"),
        ({**BODY, "messages": [{"role": "user", "content": [{"type": "text"}]}]}, "messages.0.content"),
        ({**BODY, "tool_choice": {"type": "tool", "name": "nope"}}, "nope"),
        ({**BODY, "thinking": {"type": "enabled", "budget_tokens": 10}}, "thinking"),
        ({**BODY, "max_tokens": 10_000_000}, "max_tokens"),
        ({**BODY, "messages": []}, "messages: List should have at least 1 item"),
        ([1, 2], "dictionary"),
    ]
    for body, words in cases:
        answer = httpx.post(url, json=body)
        error = answer.json()
        assert answer.status_code == 400, (body, error)
        assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error", error
        assert words in error["error"]["message"], (words, error)
    broken = httpx.post(url, content=b"{not json", headers={"content-type": "application/json"})
    assert broken.status_code == 400 and broken.json()["error"]["type"] == "invalid_request_error"


def test_metrics_count_the_messages_endpoint(server: ServerProcess) -> None:
    for prefix in ("/v1", "/anthropic/v1"):
        assert httpx.post(f"{server.url}{prefix}/messages", json=BODY).status_code == 200
    scraped = httpx.get(f"{server.url}/metrics").text
    line = next(line for line in scraped.splitlines()
                if line.startswith("llmsim_requests_total{") and 'endpoint="/messages"' in line and '"200"' in line)
    assert float(line.rsplit(" ", 1)[1]) >= 2


def test_openai_models_unchanged_without_anthropic_version(server: ServerProcess) -> None:
    openai_style = httpx.get(f"{server.url}/v1/models").json()
    anthropic_style = httpx.get(f"{server.url}/v1/models", headers=HEADERS).json()
    assert openai_style["object"] == "list" and "has_more" not in openai_style
    assert anthropic_style["data"][0]["type"] == "model" and "has_more" in anthropic_style


def test_rpm_limit_as_anthropic_reports_it(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*RPM_AND_TPM)
    url = f"{server.url}/v1/messages"
    answers = [httpx.post(url, json=BODY, headers={**HEADERS, "x-api-key": "rpm-key"}) for _ in range(3)]
    assert [answer.status_code for answer in answers] == [200, 200, 429]
    assert answers[0].headers["anthropic-ratelimit-requests-limit"] == "2"
    assert answers[0].headers["anthropic-ratelimit-requests-remaining"] == "1"
    refused = answers[2]
    assert refused.json()["error"]["type"] == "rate_limit_error" and int(refused.headers["retry-after"]) >= 1
    assert refused.headers["anthropic-ratelimit-requests-remaining"] == "0"
    assert refused.headers["anthropic-ratelimit-requests-reset"].endswith("Z")


def test_every_block_type_is_accepted(server: ServerProcess) -> None:
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    body = {**BODY, "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "metadata": {"user_id": "u-1"}, "top_k": 5, "temperature": 0.5, "stop_sequences": ["\n\nHuman:"],
            "tools": [{"name": "get_weather", "input_schema": {"type": "object"}},
                      {"type": "bash_20250124", "name": "bash"},
                      {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}],
            "messages": [
                {"role": "user", "content": [{"type": "image", "source": image},
                                             {"type": "document", "source": {"type": "text", "media_type":
                                                                             "text/plain", "data": "A memo."}},
                                             {"type": "text", "text": "Read these."}]},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "Look first.", "signature": "c2ln"},
                    {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
                    {"type": "tool_use", "id": "toolu_1", "name": "bash", "input": {"command": "ls"}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                     "content": [{"type": "text", "text": "permission denied"}]},
                    {"type": "text", "text": "<system-reminder>Stay on task.</system-reminder>"}]}]}
    answer = httpx.post(f"{server.url}/v1/messages", json=body, headers=HEADERS)
    assert answer.status_code == 200, answer.text
    assert answer.json()["stop_reason"] in ("end_turn", "tool_use")


def test_itpm_and_otpm_as_anthropic_counts_them(shared_server: Callable[..., ServerProcess]) -> None:
    """Input counted at admission, output reserved from max_tokens and settled to the output; each reported under
    its own headers, a refusal a rate_limit_error with retry-after; the OpenAI surfaces see the tighter bucket."""
    server = shared_server(*KEYED_AND_LIMITED, env=OTPM)  # a flag and the environment
    url, headers = f"{server.url}/v1/messages", {**HEADERS, "x-api-key": "itpm-otpm-key"}
    first = httpx.post(url, json={**BODY, "max_tokens": 400}, headers=headers)
    assert first.status_code == 200, first.text
    usage = first.json()["usage"]
    assert first.headers["anthropic-ratelimit-input-tokens-limit"] == "50000"
    assert first.headers["anthropic-ratelimit-input-tokens-remaining"] == str(50000 - usage["input_tokens"])
    assert first.headers["anthropic-ratelimit-output-tokens-limit"] == "600"
    assert first.headers["anthropic-ratelimit-output-tokens-remaining"] == "200"  # max_tokens reserved
    assert first.headers["anthropic-ratelimit-tokens-remaining"] == "200"  # the most restrictive: output's
    assert first.headers["anthropic-ratelimit-output-tokens-reset"].endswith("Z")
    assert "anthropic-ratelimit-requests-limit" not in first.headers  # no RPM set
    assert not any(name.startswith("x-ratelimit-limit-input") for name in first.headers)
    refused = httpx.post(url, json={**BODY, "max_tokens": 600}, headers=headers)
    assert refused.status_code == 429 and refused.json()["error"]["type"] == "rate_limit_error"
    assert "output tokens per minute" in refused.json()["error"]["message"]
    assert int(refused.headers["retry-after"]) >= 1
    left = int(refused.headers["anthropic-ratelimit-output-tokens-remaining"])
    assert 600 - usage["output_tokens"] - 1 <= left < 600  # settled to the output made, not the 400 reserved
    chat = httpx.post(f"{server.url}/v1/chat/completions", headers={"Authorization": "Bearer sk-openai"},
                      json={"model": "gpt-4o", "max_tokens": 100, "messages": [{"role": "user", "content": "Hi"}]})
    assert chat.status_code == 200
    assert (chat.headers["x-ratelimit-limit-tokens"], chat.headers["x-ratelimit-remaining-tokens"]) == ("600", "500")
    assert not any("input-tokens" in name or "output-tokens" in name for name in chat.headers)


def test_tpm_alone_reports_under_every_token_header(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*RPM_AND_TPM)
    answer = httpx.post(f"{server.url}/v1/messages", json=BODY, headers={**HEADERS, "x-api-key": "tpm-key"})
    reserved = answer.json()["usage"]["input_tokens"] + BODY["max_tokens"]  # type: ignore[operator]
    for name in ("tokens", "input-tokens", "output-tokens"):
        assert answer.headers[f"anthropic-ratelimit-{name}-limit"] == "5000"
        assert answer.headers[f"anthropic-ratelimit-{name}-remaining"] == str(5000 - reserved)


def test_each_server_has_its_own_prompt_cache(server: ServerProcess,
                                              shared_server: Callable[..., ServerProcess]) -> None:
    """A prefix one server cached is not read by another (in process, as the tests run them, they share a process)."""
    system = [{"type": "text", "text": "You answer questions about this atlas. " + "The atlas shows. " * 600,
               "cache_control": {"type": "ephemeral"}}]
    body = {**BODY, "system": system}
    first = httpx.post(f"{server.url}/v1/messages", json=body, headers=HEADERS).json()["usage"]
    again = httpx.post(f"{server.url}/v1/messages", json=body, headers=HEADERS).json()["usage"]
    other = shared_server("--seed", "11")
    elsewhere = httpx.post(f"{other.url}/v1/messages", json=body, headers=HEADERS).json()["usage"]
    assert first["cache_creation_input_tokens"] > 1024 and again["cache_read_input_tokens"] > 1024
    assert elsewhere["cache_read_input_tokens"] == 0
    assert elsewhere["cache_creation_input_tokens"] == first["cache_creation_input_tokens"]


def test_cache_reads_do_not_count_toward_itpm(server: ServerProcess,
                                              shared_server: Callable[..., ServerProcess]) -> None:
    system = [{"type": "text", "text": "You answer questions about this manual. " + "The manual says. " * 600,
               "cache_control": {"type": "ephemeral"}}]
    body = {**BODY, "system": system}
    size = httpx.post(f"{server.url}/v1/messages/count_tokens", json=body, headers=HEADERS).json()
    server = shared_server("--itpm", str(size["input_tokens"] + 100))  # one whole prompt fits, not two
    url, headers = f"{server.url}/v1/messages", {**HEADERS, "x-api-key": "cache-key"}
    first = httpx.post(url, json=body, headers=headers)
    assert first.status_code == 200 and first.json()["usage"]["cache_creation_input_tokens"] > 1024  # counted
    assert first.headers["anthropic-ratelimit-input-tokens-remaining"] == "100"
    second = httpx.post(url, json=body, headers=headers)  # the prefix read from the cache: only the rest counts
    assert second.status_code == 200, second.text
    assert second.json()["usage"]["cache_read_input_tokens"] > 1024
    other = httpx.post(url, json={**body, "system": "Something else entirely. " * 300}, headers=headers)
    assert other.status_code == 429 and "input tokens per minute" in other.json()["error"]["message"]
