"""inspect-ai (`inspect_ai`): its `openai/…` model provider given LLMSim's `base_url`, driven the way a solver
drives it (`Model.generate`, `execute_tools`), on Chat Completions (its default for gpt-4o) and on the Responses
API (`responses_api=True`; its default for reasoning models). Heavy imports stay inside the tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("inspect_ai")

CLIENT = "inspect-ai"


class City(BaseModel):
    name: str
    country: str
    population: int


def model(llmsim: LLMSim, name: str = "gpt-4o", **options: Any) -> Any:
    from inspect_ai.model import GenerateConfig, get_model
    config = GenerateConfig(max_retries=options.pop("max_retries", 0), **options.pop("config", {}))
    return get_model(f"openai/{name}", base_url=llmsim.base_url, api_key="sk-test", config=config,
                     memoize=False, **options)


def test_text(llmsim: LLMSim) -> None:
    for responses_api in (True, False):
        output = asyncio.run(model(llmsim, responses_api=responses_api).generate("What is the capital of France?"))
        assert output.completion.strip()
        assert ("input" if responses_api else "messages") in last(llmsim)


def test_streaming(llmsim: LLMSim) -> None:
    deltas: list[str] = []

    async def on_stream(event: Any) -> None:
        if event.type == "text":
            deltas.append(event.text)

    output = asyncio.run(model(llmsim).generate("Tell me a story.", on_stream=on_stream))
    assert len(deltas) > 1 and "".join(deltas) == output.completion and last(llmsim)["stream"] is True


def test_client_history(llmsim: LLMSim) -> None:
    from inspect_ai.model import ChatMessageUser

    async def run() -> None:
        chat = model(llmsim)
        messages: list[Any] = [ChatMessageUser(content="My name is Ada. Remember it.")]
        messages.append((await chat.generate(messages)).message)
        messages.append(ChatMessageUser(content="What is my name?"))
        assert (await chat.generate(messages)).completion.strip()

    asyncio.run(run())
    assert "My name is Ada" in texts(last(llmsim)["messages"])  # gpt-4o: Chat Completions, its default


def test_tools(llmsim: LLMSim) -> None:
    from inspect_ai.model import ChatMessageUser, execute_tools
    from inspect_ai.tool import tool

    @tool
    def get_weather() -> Any:
        async def execute(city: str) -> str:
            """Get the current weather in a city.

            Args:
              city: The city name.
            """
            return f"It is sunny and 22 C in {city}."
        return execute

    async def run(responses_api: bool) -> str:
        chat, tools = model(llmsim, responses_api=responses_api), [get_weather()]
        messages: list[Any] = [ChatMessageUser(content="What's the weather in Paris?")]
        output = await chat.generate(messages, tools=tools)
        assert [call.function for call in output.message.tool_calls or []] == ["get_weather"]
        messages.append(output.message)
        messages.extend((await execute_tools(messages, tools)).messages)
        return (await chat.generate(messages, tools=tools)).completion

    for responses_api in (True, False):
        assert "sunny and 22 C" in asyncio.run(run(responses_api))
        assert "sunny and 22 C" in texts(last(llmsim)["input" if responses_api else "messages"])


def test_structured(llmsim: LLMSim) -> None:
    from inspect_ai.model import ResponseSchema
    from inspect_ai.util import json_schema
    schema = ResponseSchema(name="city", json_schema=json_schema(City), strict=True)
    output = asyncio.run(model(llmsim, config={"response_schema": schema}).generate("Describe Paris."))
    assert City.model_validate(json.loads(output.completion)).name
    assert last(llmsim)["response_format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim) -> None:
    from inspect_ai.model import ContentReasoning
    chat = model(llmsim, "gpt-5", config={"reasoning_effort": "low", "reasoning_summary": "auto"})
    output = asyncio.run(chat.generate("What is 17 * 23?"))
    content = output.message.content
    assert any(isinstance(part, ContentReasoning) for part in content) and output.completion.strip()
    assert last(llmsim)["reasoning"]["effort"] == "low"


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    assert asyncio.run(model(llmsim, max_retries=2).generate("hi")).completion.strip()
    retried(llmsim)
