"""Structured outputs on the Messages API through the clients that ask for them: anthropic's `messages.parse` (and
the beta's), LangChain's `ChatAnthropic.with_structured_output(method="json_schema")`, pydantic-ai's `NativeOutput`
and litellm's `response_format`, streamed and not. Each sends `output_config.format` (or the beta's
`output_format`); the answer is JSON from the request's schema (the generator of the Responses API's json_schema
format), with `stop_reason: end_turn`. The AI SDK's `generateObject` is tests/clients/node/anthropic-ai-sdk.mjs's."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import jsonschema
import pytest
from pydantic import BaseModel, Field

from llmsim.pytest_plugin import LLMSim
from optional import needs

MODEL = "claude-sonnet-4-6"


class City(BaseModel):
    name: str
    population: int = Field(ge=0)
    landmarks: list[str]
    coastal: bool


def asked_format(llmsim: LLMSim) -> dict[str, Any]:
    body = llmsim.requests[-1]
    fmt: dict[str, Any] = (body.get("output_config") or {}).get("format") or body.get("output_format") or {}
    assert fmt.get("type") == "json_schema", body
    return fmt


def test_anthropic_messages_parse(llmsim: LLMSim) -> None:
    client = anthropic.Anthropic(base_url=llmsim.server.url, api_key="sk-ant-test", max_retries=0)
    parsed = client.messages.parse(model=MODEL, max_tokens=1024, output_format=City,
                                   messages=[{"role": "user", "content": "Describe Lisbon."}])
    assert isinstance(parsed.parsed_output, City) and parsed.stop_reason == "end_turn"
    fmt = asked_format(llmsim)
    text = parsed.content[0].text  # type: ignore[union-attr]
    jsonschema.validate(json.loads(text), fmt["schema"])
    with client.messages.stream(model=MODEL, max_tokens=1024, output_format=City,
                                messages=[{"role": "user", "content": "Describe Porto."}]) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "end_turn"
    City.model_validate_json(streamed.content[0].text)  # type: ignore[union-attr]
    beta = client.beta.messages.parse(model=MODEL, max_tokens=1024, output_format=City,
                                      messages=[{"role": "user", "content": "Describe Faro."}])
    assert isinstance(beta.parsed_output, City)


def test_raw_output_format_and_output_config_give_schema_json(llmsim: LLMSim) -> None:
    """The beta's top-level `output_format` (older clients) and `output_config.format` alike."""
    schema = {"type": "object", "properties": {"answer": {"type": "string"}, "score": {"type": "number"},
                                               "tags": {"type": "array", "items": {"type": "string"}}},
              "required": ["answer", "score", "tags"], "additionalProperties": False}
    client = anthropic.Anthropic(base_url=llmsim.server.url, api_key="sk-ant-test", max_retries=0)
    for extra in ({"output_format": {"type": "json_schema", "schema": schema}},
                  {"output_config": {"format": {"type": "json_schema", "schema": schema}}}):
        made = client.messages.create(model=MODEL, max_tokens=1024, extra_body=extra,
                                      messages=[{"role": "user", "content": "Rate this sentence."}])
        jsonschema.validate(json.loads(made.content[0].text), schema)  # type: ignore[union-attr]
        assert made.stop_reason == "end_turn"


@needs("langchain_anthropic")
def test_langchain_with_structured_output_json_schema(llmsim: LLMSim) -> None:
    from langchain_anthropic import ChatAnthropic

    model = ChatAnthropic(model=MODEL, base_url=llmsim.server.url, api_key="sk-ant-test", max_tokens=1024,
                          max_retries=0)  # type: ignore[call-arg]
    structured = model.with_structured_output(City, method="json_schema")
    city = structured.invoke("Describe Lisbon.")
    assert isinstance(city, City)
    asked_format(llmsim)
    streamed = list(structured.stream("Describe Porto."))
    assert isinstance(streamed[-1], City)


@needs("pydantic_ai")
def test_pydantic_ai_native_output(llmsim: LLMSim) -> None:
    from pydantic_ai import Agent, NativeOutput
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(base_url=llmsim.server.url, api_key="sk-ant-test")
    agent = Agent(AnthropicModel(MODEL, provider=provider), output_type=NativeOutput(City))
    result = agent.run_sync("Describe Lisbon.")
    assert isinstance(result.output, City)
    asked_format(llmsim)

    async def streamed() -> City:
        async with agent.run_stream("Describe Porto.") as run:
            return await run.get_output()

    assert isinstance(asyncio.run(streamed()), City)
    assert llmsim.requests[-1]["stream"] is True


@needs("litellm")
def test_litellm_response_format(llmsim: LLMSim, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its bundled price list: no download at import
    import litellm

    answer = litellm.completion(model=f"anthropic/{MODEL}", api_base=llmsim.server.url, api_key="sk-ant-test",
                                messages=[{"role": "user", "content": "Describe Lisbon."}], response_format=City,
                                max_tokens=1024)
    City.model_validate_json(answer.choices[0].message.content)  # type: ignore[union-attr]
    asked_format(llmsim)
