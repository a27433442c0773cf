"""Bad and oversized Messages requests get Anthropic's envelope and a 4xx before the work their size would cost,
and an outage of the store is a 503 that says so: never a 500, a traceback or an HTML page."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from llmsim.messages import schema
from llmsim.testing import RedisServer, ServerProcess

MODEL = "claude-sonnet-4-6"
HELLO: Any = [{"role": "user", "content": "Hello"}]
BODY = {"model": MODEL, "max_tokens": 50, "messages": HELLO}


def refused(answer: httpx.Response, status: int = 400) -> str:
    assert answer.status_code == status, answer.text[:300]
    body = answer.json()
    assert body["type"] == "error" and body["request_id"] == answer.headers["request-id"]
    message: str = body["error"]["message"]
    return message


def test_counts_past_the_bounds_are_400s(server: ServerProcess) -> None:
    url = f"{server.url}/v1/messages"
    turns = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(schema.MAX_MESSAGES + 1)]
    assert refused(httpx.post(url, json={**BODY, "messages": turns}, timeout=60)).startswith(
        "messages: too many messages")
    blocks = [{"type": "text", "text": "hi"}] * (schema.MAX_BLOCKS + 1)
    assert refused(httpx.post(url, json={**BODY, "messages": [{"role": "user", "content": blocks}]},
                              timeout=60)).startswith("messages: too many content blocks")
    stops = [f"stop{i}" for i in range(schema.MAX_STOP_SEQUENCES + 1)]
    assert refused(httpx.post(url, json={**BODY, "stop_sequences": stops})).startswith("stop_sequences: too many")
    assert refused(httpx.post(url, json={**BODY, "stop_sequences": ["x" * (schema.MAX_STOP_CHARS + 1)]})
                   ).startswith("stop_sequences:")
    within = [{"role": "user" if i % 2 == 0 else "assistant", "content": "hi"} for i in range(999)]
    assert httpx.post(url, json={**BODY, "messages": within}, timeout=60).status_code == 200


def test_many_long_stop_sequences_still_stop_the_text(server: ServerProcess) -> None:
    """The held-back text is found per stop in linear time: the most stops of the longest length still answer,
    and a stop split across deltas still ends the text."""
    stops = [f"{i:04d}" + "q" * (schema.MAX_STOP_CHARS - 4) for i in range(schema.MAX_STOP_SEQUENCES - 1)]
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0)
    said = client.messages.create(model=MODEL, max_tokens=300, stop_sequences=[*stops, " the"],
                                  messages=[{"role": "user", "content": "Tell me a story"}])
    assert said.stop_reason in ("stop_sequence", "end_turn", "max_tokens")
    if said.stop_reason == "stop_sequence":
        assert said.stop_sequence == " the" and " the" not in said.content[0].text  # type: ignore[union-attr]


def test_a_body_past_the_limit_is_413_in_anthropics_envelope(start_server: Any) -> None:
    server = start_server("--max-body-bytes", "100000")
    big = {**BODY, "messages": [{"role": "user", "content": "x" * 200_000}]}
    answer = httpx.post(f"{server.url}/v1/messages", json=big)
    refused(answer, 413)
    assert answer.json()["error"]["type"] == "request_too_large"


@pytest.mark.parametrize("stream", [False, True])
def test_an_invalid_tool_schema_is_a_400(server: ServerProcess, stream: bool) -> None:
    tools = [{"name": "t", "input_schema": {"type": "object", "properties": {"a": {"type": "string"}},
                                            "required": [[]]}}]
    answer = httpx.post(f"{server.url}/v1/messages", json={**BODY, "stream": stream, "tools": tools,
                                                           "tool_choice": {"type": "any"}})
    assert answer.headers["content-type"].startswith("application/json")
    assert refused(answer).startswith("tools.0.custom.input_schema: JSON schema is invalid")
    fmt = {"type": "json_schema", "schema": {"type": "object", "required": [[]]}}
    answer = httpx.post(f"{server.url}/v1/messages", json={**BODY, "stream": stream, "output_config": {"format": fmt}})
    assert refused(answer).startswith("output_config.format.schema: JSON schema is invalid")


def test_redis_down_is_a_503_in_anthropics_envelope_with_the_cause() -> None:
    with RedisServer() as redis_server, ServerProcess("--speed", "0", "--store", redis_server.url,
                                                      startup_timeout=120) as server:
        assert httpx.post(f"{server.url}/v1/messages", json=BODY).status_code == 200
        redis_server.stop()
        for stream in (False, True):
            answer = httpx.post(f"{server.url}/v1/messages", json={**BODY, "stream": stream}, timeout=30)
            message = refused(answer, 503)
            assert answer.json()["error"]["type"] == "api_error" and "Redis" in message, message
            assert "Traceback" not in answer.text and json.loads(answer.text)
        counted = httpx.post(f"{server.url}/v1/messages/count_tokens", json={"model": MODEL, "messages": HELLO})
        assert counted.status_code == 200  # nothing stored or admitted: counting needs no store
