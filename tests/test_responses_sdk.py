"""The core flows through the official openai SDK against a real server."""

from __future__ import annotations

import httpx
import openai
import pytest
from openai.types.responses import Response

from llmsim.testing import ServerProcess


def test_create_returns_a_complete_response(client: openai.OpenAI, server: ServerProcess) -> None:
    response = client.responses.create(model="gpt-4o", input="Write a one-sentence bedtime story.")
    assert response.status == "completed"
    assert response.id.startswith("resp_")
    assert response.model == "gpt-4o-2024-08-06"
    assert response.output_text
    [message] = response.output
    assert message.type == "message" and message.role == "assistant" and message.id.startswith("msg_")
    usage = response.usage
    assert usage is not None and usage.input_tokens > 0 and usage.output_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.output_tokens_details.reasoning_tokens == 0

    raw = httpx.get(f"{server.base_url}/responses/{response.id}").json()
    missing = {f.alias or name for name, f in Response.model_fields.items()} - raw.keys()
    assert not missing, f"fields of the SDK's Response type missing from the JSON: {missing}"


def test_stream_helper_and_final_response(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-5", input="Tell me a story", reasoning={"summary": "auto"}) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed"
    assert "".join(deltas) == final.output_text
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].summary[0].text
