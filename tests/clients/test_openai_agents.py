"""The OpenAI Agents SDK (openai-agents): Runner, function tools, handoffs, streaming, on its Responses model."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import openai
import pytest
from openai.types.responses import ResponseTextDeltaEvent
from openai.types.shared import Reasoning
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim

if TYPE_CHECKING:
    from agents import Agent, FunctionTool, ModelSettings, OpenAIResponsesModel, Runner
    from agents.items import ReasoningItem, ToolCallOutputItem

CLIENT = "openai-agents"


@pytest.fixture(scope="module", autouse=True)
def _agents() -> None:
    """Imported when the module's tests run, not at collection: every xdist process collects every module, and
    openai-agents costs a core ~1 s to import."""
    global Agent, ModelSettings, OpenAIResponsesModel, Runner, ReasoningItem, ToolCallOutputItem, get_weather
    from agents import Agent, ModelSettings, OpenAIResponsesModel, Runner, function_tool
    from agents.items import ReasoningItem, ToolCallOutputItem

    @function_tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return f"It is sunny and 22 C in {city}."


@pytest.fixture(autouse=True)
def no_tracing(_agents: None) -> None:
    from agents import set_tracing_disabled
    set_tracing_disabled(True)  # traces would be uploaded to OpenAI


class City(BaseModel):
    name: str
    country: str
    population: int


get_weather: FunctionTool  # made by _agents


def model(llmsim: LLMSim, name: str = "gpt-4o") -> OpenAIResponsesModel:
    # The SDK's own client defaults (two retries); only where it points changes.
    return OpenAIResponsesModel(name, openai.AsyncOpenAI(base_url=llmsim.base_url, api_key="sk-test"))


def agent(llmsim: LLMSim, name: str = "gpt-4o", **options: object) -> Agent:
    return Agent(name="assistant", instructions="You are a helpful assistant.", model=model(llmsim, name), **options)


def test_text(llmsim: LLMSim) -> None:
    result = Runner.run_sync(agent(llmsim), "What is the capital of France?")
    assert isinstance(result.final_output, str) and result.final_output.strip()
    assert last(llmsim)["instructions"] == "You are a helpful assistant."


def test_streaming(llmsim: LLMSim) -> None:
    async def run() -> tuple[list[str], str]:
        result = Runner.run_streamed(agent(llmsim), "Tell me a story about a lighthouse.")
        deltas = [event.data.delta async for event in result.stream_events()
                  if event.type == "raw_response_event" and isinstance(event.data, ResponseTextDeltaEvent)]
        return deltas, result.final_output

    deltas, output = asyncio.run(run())
    assert len(deltas) > 1 and "".join(deltas) == output
    assert last(llmsim)["stream"] is True


def test_server_state(llmsim: LLMSim) -> None:
    first = Runner.run_sync(agent(llmsim), "My name is Ada. Remember it.")
    second = Runner.run_sync(agent(llmsim), "What is my name?", previous_response_id=first.last_response_id)
    assert second.final_output.strip()
    assert last(llmsim)["previous_response_id"] == first.last_response_id
    assert "Ada" not in texts(last(llmsim)["input"])


def test_client_history(llmsim: LLMSim) -> None:
    first = Runner.run_sync(agent(llmsim), "My name is Ada. Remember it.")
    history = [*first.to_input_list(), {"role": "user", "content": "What is my name?"}]
    assert Runner.run_sync(agent(llmsim), history).final_output.strip()
    sent = texts(last(llmsim)["input"])
    assert "My name is Ada" in sent and first.final_output[:40] in sent


def test_tools(llmsim: LLMSim) -> None:
    result = Runner.run_sync(agent(llmsim, tools=[get_weather]), "What's the weather in Paris?")
    assert any(isinstance(item, ToolCallOutputItem) for item in result.new_items)
    assert "sunny and 22 C" in result.final_output


def test_tools__streaming(llmsim: LLMSim) -> None:
    async def run() -> str:
        result = Runner.run_streamed(agent(llmsim, tools=[get_weather]), "What's the weather in Paris?")
        async for _ in result.stream_events():
            pass
        return result.final_output

    assert "sunny and 22 C" in asyncio.run(run())


def test_tools__handoff(llmsim: LLMSim) -> None:
    spanish = Agent(name="spanish_agent", instructions="Answer in Spanish.", model=model(llmsim),
                    handoff_description="A Spanish speaking agent.")
    triage = agent(llmsim, handoffs=[spanish])
    result = Runner.run_sync(triage, "Transfer me to the Spanish agent please.")
    assert result.last_agent is spanish and result.final_output.strip()
    assert last(llmsim)["instructions"] == "Answer in Spanish."


def test_structured(llmsim: LLMSim) -> None:
    city = Runner.run_sync(agent(llmsim, output_type=City), "Describe Paris.").final_output
    assert isinstance(city, City) and city.name
    assert last(llmsim)["text"]["format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim) -> None:
    settings = ModelSettings(reasoning=Reasoning(effort="low", summary="auto"))
    result = Runner.run_sync(agent(llmsim, "gpt-5", model_settings=settings, tools=[get_weather]),
                             "What's the weather in Paris?")
    assert any(isinstance(item, ReasoningItem) for item in result.new_items)
    assert "sunny and 22 C" in result.final_output


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    assert Runner.run_sync(agent(llmsim), "hi").final_output.strip()
    retried(llmsim)
