"""pydantic-ai agents on OpenAIResponsesModel, with its defaults (its openai client retries twice)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pytest
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("pydantic_ai")

if TYPE_CHECKING:
    from pydantic_ai import Agent, NativeOutput, PromptedOutput
    from pydantic_ai.messages import ModelResponse, ThinkingPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
    from pydantic_ai.providers.openai import OpenAIProvider

CLIENT = "pydantic-ai"


@pytest.fixture(scope="module", autouse=True)
def _pydantic_ai() -> None:
    """Imported when the module's tests run, not at collection: every xdist process collects every module, and
    pydantic-ai costs a core ~0.5 s to import."""
    global Agent, NativeOutput, PromptedOutput, ModelResponse, ThinkingPart, ToolCallPart, ToolReturnPart
    global OpenAIResponsesModel, OpenAIResponsesModelSettings, OpenAIProvider
    from pydantic_ai import Agent, NativeOutput, PromptedOutput
    from pydantic_ai.messages import ModelResponse, ThinkingPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.openai import OpenAIResponsesModel, OpenAIResponsesModelSettings
    from pydantic_ai.providers.openai import OpenAIProvider


class City(BaseModel):
    name: str
    country: str
    population: int


def model(llmsim: LLMSim, name: str = "gpt-4o") -> OpenAIResponsesModel:
    return OpenAIResponsesModel(name, provider=OpenAIProvider(base_url=llmsim.base_url, api_key="sk-test"))


def weather_agent(llmsim: LLMSim, name: str = "gpt-4o", **options: object) -> Agent:
    agent = Agent(model(llmsim, name), **options)

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return f"It is sunny and 22 C in {city}."

    return agent


def tool_round_trip(result: object) -> None:
    parts = [part for message in result.all_messages() for part in message.parts]
    assert any(isinstance(p, ToolCallPart) and p.tool_name == "get_weather" for p in parts)
    assert any(isinstance(p, ToolReturnPart) and p.tool_name == "get_weather" for p in parts)
    assert "sunny and 22 C" in result.output


def test_text(llmsim: LLMSim) -> None:
    result = Agent(model(llmsim), instructions="Be concise.").run_sync("What is the capital of France?")
    assert isinstance(result.output, str) and result.output.strip()
    assert result.usage.output_tokens > 0
    assert last(llmsim)["instructions"] == "Be concise."


def test_streaming(llmsim: LLMSim) -> None:
    async def run() -> tuple[list[str], str]:
        async with Agent(model(llmsim)).run_stream("Tell me a story about a lighthouse.") as result:
            deltas = [delta async for delta in result.stream_text(delta=True, debounce_by=None)]
            return deltas, await result.get_output()

    deltas, output = asyncio.run(run())
    assert len(deltas) > 1 and "".join(deltas) == output and output.strip()
    assert last(llmsim)["stream"] is True


def test_server_state(llmsim: LLMSim) -> None:
    agent = Agent(model(llmsim), model_settings=OpenAIResponsesModelSettings(openai_previous_response_id="auto"))
    first = agent.run_sync("My name is Ada. Remember it.")
    second = agent.run_sync("What is my name?", message_history=first.all_messages())
    assert second.output.strip()
    body = last(llmsim)
    response_id = next(m.provider_response_id for m in first.all_messages() if isinstance(m, ModelResponse))
    assert body["previous_response_id"] == response_id
    assert "Ada" not in texts(body["input"])


def test_client_history(llmsim: LLMSim) -> None:
    agent = Agent(model(llmsim))
    first = agent.run_sync("My name is Ada. Remember it.")
    second = agent.run_sync("What is my name?", message_history=first.all_messages())
    assert second.output.strip()
    sent = texts(last(llmsim)["input"])
    assert "My name is Ada" in sent and first.output[:40] in sent


def test_tools(llmsim: LLMSim) -> None:
    tool_round_trip(weather_agent(llmsim).run_sync("What's the weather in Paris?"))


def test_tools__streaming(llmsim: LLMSim) -> None:
    async def run() -> str:
        async with weather_agent(llmsim).run_stream("What's the weather in Paris?") as result:
            return await result.get_output()

    assert "sunny and 22 C" in asyncio.run(run())


def test_structured__tool_output(llmsim: LLMSim) -> None:  # pydantic-ai's default: an output tool
    city = Agent(model(llmsim), output_type=City).run_sync("Describe Paris.").output
    assert isinstance(city, City) and city.name


def test_structured__native(llmsim: LLMSim) -> None:
    city = Agent(model(llmsim), output_type=NativeOutput(City)).run_sync("Describe Paris.").output
    assert isinstance(city, City) and city.name
    assert last(llmsim)["text"]["format"]["type"] == "json_schema"


def test_structured__prompted(llmsim: LLMSim) -> None:
    city = Agent(model(llmsim), output_type=PromptedOutput(City)).run_sync("Describe Paris.").output
    assert isinstance(city, City) and city.name


def test_reasoning(llmsim: LLMSim) -> None:
    settings = OpenAIResponsesModelSettings(openai_reasoning_effort="low", openai_reasoning_summary="detailed")
    result = Agent(model(llmsim, "gpt-5"), model_settings=settings).run_sync("What is 17 * 23?")
    parts = [part for message in result.all_messages() for part in message.parts]
    assert any(isinstance(p, ThinkingPart) and p.content for p in parts)
    assert result.output.strip()


def test_reasoning__tool_loop(llmsim: LLMSim) -> None:
    settings = OpenAIResponsesModelSettings(openai_reasoning_effort="low", openai_reasoning_summary="detailed")
    tool_round_trip(weather_agent(llmsim, "gpt-5", model_settings=settings).run_sync("What's the weather in Paris?"))


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    assert Agent(model(llmsim)).run_sync("hi").output.strip()
    retried(llmsim)
