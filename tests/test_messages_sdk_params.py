"""Every field and enum value the anthropic SDK's `MessageCreateParams` (stable and beta) and `MessageCountTokensParams`
declare is accepted by /v1/messages and its count_tokens, and every streamed event reads as the SDK's own types.

The walk is tests/test_sdk_params.py's, over the anthropic SDK's TypedDicts: one body per declared field and per
value of each enum, built from a minimal valid request, sent strict (X-LLMSim-Strict-Params), so a field the
server does not know is a 400 here rather than a warning. A field may still be refused for its value when the live
API refuses it too; the walk's samples are made valid where it would otherwise trip (a thinking budget under 1,024
or over `max_tokens`, a `tool_choice` naming a tool the request lacks, a schema that is no JSON Schema). Each create
body is sent again streamed; every event is validated against the SDK's `RawMessageStreamEvent` (the beta's for
beta bodies), the final message too."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from anthropic.types import Message, RawMessageStreamEvent, message_count_tokens_params, message_create_params
from anthropic.types.beta import BetaMessage, BetaRawMessageStreamEvent
from anthropic.types.beta import message_count_tokens_params as beta_count_params
from anthropic.types.beta import message_create_params as beta_create_params
from pydantic import TypeAdapter

from llmsim.testing import ServerProcess
from test_sdk_params import MAX_DEPTH, SAMPLE_STR, cases

MODEL = "claude-sonnet-4-6"
MINIMAL = {"model": MODEL, "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}]}
COUNT = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
LOOKUP = {"name": "lookup", "input_schema": {"type": "object", "properties": {}}}
STRICT = {"X-LLMSim-Strict-Params": "true", "anthropic-version": "2023-06-01"}
NOT_BODY = ("betas",)  # a header (anthropic-beta), not a body field
PARAMS = {
    "stable": (message_create_params.MessageCreateParamsNonStreaming, MINIMAL, "/v1/messages"),
    "beta": (beta_create_params.MessageCreateParamsNonStreaming, MINIMAL, "/v1/messages"),
    "stable count": (message_count_tokens_params.MessageCountTokensParams, COUNT, "/v1/messages/count_tokens"),
    "beta count": (beta_count_params.MessageCountTokensParams, COUNT, "/v1/messages/count_tokens"),
}
EVENTS = {"stable": (TypeAdapter(RawMessageStreamEvent), Message),
          "beta": (TypeAdapter(BetaRawMessageStreamEvent), BetaMessage)}


def _valid(body: dict[str, Any]) -> dict[str, Any]:
    """The walk's body, with the values the live API refuses whatever the schema says made valid (a thinking
    budget under 1,024 or not under `max_tokens`, a `tool_choice` naming a tool the request lacks)."""
    for key in NOT_BODY:
        body.pop(key, None)
    body.pop("stream", None)
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and "budget_tokens" in thinking:
        body["thinking"] = {**thinking, "budget_tokens": 1024}
        if "max_tokens" in body:
            body["max_tokens"] = max(body["max_tokens"], 2048)
    config = body.get("output_config")
    if isinstance(config, dict) and isinstance(config.get("format"), dict):  # the walk's free-form object is no schema
        body["output_config"] = {**config, "format": {**config["format"], "schema": {"type": "object"}}}
    for tool in body.get("tools") or []:
        properties = tool.get("input_schema", {}).get("properties") if isinstance(tool, dict) else None
        if isinstance(properties, dict) and not all(isinstance(v, dict) for v in properties.values()):
            tool["input_schema"] = {**tool["input_schema"], "properties": {}}
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool" and not body.get("tools"):
        body["tools"] = [{**LOOKUP, "name": choice["name"]}]
    return body


def bodies(kind: str, file_id: str) -> list[tuple[str, dict[str, Any]]]:
    params, minimal, _ = PARAMS[kind]
    saved = dict(SAMPLE_STR)
    SAMPLE_STR.update(model=MODEL, file_id=file_id)  # a block that names a file names one that is there
    try:
        return [(label, _valid(body)) for label, body in cases(params, lambda v: {**minimal, **v}, MAX_DEPTH)]
    finally:
        SAMPLE_STR.clear()
        SAMPLE_STR.update(saved)


def refused(http: httpx.Client, path: str, label: str, body: dict[str, Any]) -> str | None:
    answer = http.post(path, json=body, headers=STRICT)
    if answer.status_code >= 400:
        return f"{label}: {answer.status_code} {answer.text[:300]}"
    if "x-llmsim-warnings" in answer.headers:
        return f"{label}: {answer.headers['x-llmsim-warnings']}"
    return None


def stream_problem(http: httpx.Client, kind: str, label: str, body: dict[str, Any]) -> str | None:
    adapter, final = EVENTS[kind]
    with http.stream("POST", "/v1/messages", json={**body, "stream": True}, headers=STRICT) as answer:
        if answer.status_code != 200:
            return f"{label} (streamed): {answer.status_code} {answer.read()[:300]!r}"
        message: dict[str, Any] = {}
        for line in answer.iter_lines():
            if not line.startswith("data: "):
                continue
            data = json.loads(line[6:])
            if data["type"] == "ping":  # the SDK's stream reads past it; no type of its own
                continue
            try:
                adapter.validate_python(data)
            except ValueError as error:
                return f"{label}: {data['type']} {str(error)[:300]}"
            if data["type"] == "message_start":
                message = data["message"]
            elif data["type"] == "content_block_start":
                message["content"].append(data["content_block"])
            elif data["type"] == "message_delta":
                message.update(data["delta"])
            elif data["type"] == "error":
                return f"{label}: {data}"
    try:
        final.model_validate(message)
    except ValueError as error:
        return f"{label}: the message {str(error)[:300]}"
    return None


@pytest.fixture(scope="module")
def file_id(server: ServerProcess) -> str:
    """A file uploaded to the Files API, for the blocks whose source names one (an unknown id is the live 404)."""
    answer = httpx.post(f"{server.url}/v1/files", files={"file": ("notes.txt", b"Some notes.", "text/plain")},
                        headers={"anthropic-beta": "files-api-2025-04-14", "anthropic-version": "2023-06-01"})
    assert answer.status_code == 200, answer.text
    return str(answer.json()["id"])


@pytest.mark.parametrize("kind", PARAMS)
def test_every_declared_field_is_accepted(server: ServerProcess, file_id: str, kind: str) -> None:
    found = bodies(kind, file_id)
    assert len(found) > 500  # the walk reaches blocks, tools, toolsets and their configs
    path = PARAMS[kind][2]
    with httpx.Client(base_url=server.url, timeout=60) as http:
        problems = [problem for label, body in found if (problem := refused(http, path, label, body))]
    assert problems == []


@pytest.mark.parametrize("kind", EVENTS)
def test_every_streamed_event_reads_as_the_sdks(server: ServerProcess, file_id: str, kind: str) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        problems = [problem for label, body in bodies(kind, file_id)
                    if (problem := stream_problem(http, kind, label, body))]
    assert problems == []
