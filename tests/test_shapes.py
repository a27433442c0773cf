"""Shapes the SDK's types define, field by field: what clients parse strictly must be there, and no more."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai

from llmsim.testing import ServerProcess

TOOL = {"type": "function", "name": "lookup", "parameters": {"type": "object", "properties": {}}}


def _events(server: ServerProcess, body: dict[str, Any]) -> list[dict[str, Any]]:
    with httpx.stream("POST", f"{server.base_url}/responses", json={**body, "stream": True}, timeout=30) as answer:
        return [json.loads(line[6:]) for line in answer.iter_lines() if line.startswith("data: ")]


def test_text_events_carry_logprobs_without_bytes(server: ServerProcess) -> None:
    events = _events(server, {"model": "gpt-4o", "input": "hi", "top_logprobs": 2,
                              "include": ["message.output_text.logprobs"]})
    text_events = [e for e in events if e["type"] in ("response.output_text.delta", "response.output_text.done")]
    logprobs = [p for e in text_events for p in e["logprobs"]]
    assert logprobs and all(set(p) == {"token", "logprob", "top_logprobs"} for p in logprobs)
    assert all(set(t) == {"token", "logprob"} for p in logprobs for t in p["top_logprobs"])
    part = next(e for e in events if e["type"] == "response.content_part.done")["part"]
    assert all(p["bytes"] == list(p["token"].encode()) for p in part["logprobs"])  # the part keeps them


def test_echoed_function_tools_carry_only_what_is_set(client: openai.OpenAI, server: ServerProcess) -> None:
    plain = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi", "tools": [TOOL]},
                       timeout=30).json()["tools"][0]
    assert plain == {**TOOL, "description": None, "strict": True}  # no `defer_loading: null`
    deferred = client.responses.create(model="gpt-4o", input="hi", tools=[{**TOOL, "defer_loading": True}],  # type: ignore[list-item]
                                       tool_choice="none")
    assert deferred.tools[0].defer_loading is True  # type: ignore[union-attr]


def test_conversation_items_keep_output_text_logprobs(client: openai.OpenAI, server: ServerProcess) -> None:
    conversation = client.conversations.create()
    client.responses.create(model="gpt-4o", input="hi", conversation=conversation.id)
    raw = httpx.get(f"{server.base_url}/conversations/{conversation.id}/items", timeout=30).json()["data"]
    assert raw[0]["content"][0]["type"] == "output_text" and raw[0]["content"][0]["logprobs"] == []
