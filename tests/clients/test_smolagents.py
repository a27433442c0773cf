"""smolagents against the plain simulator, with no scenario: a ToolCallingAgent and a CodeAgent each call the
tool with the question's argument and end their loop with a final answer built from its result; its
OpenAIServerModel alone fills the matrix's other cells."""

from __future__ import annotations

import json
from typing import Any

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("smolagents")

CLIENT = "smolagents"


def weather_tool() -> Any:
    from smolagents import Tool

    class GetWeather(Tool):
        name = "get_weather"
        description = "Get the current weather in a city."
        inputs = {"city": {"type": "string", "description": "The city name."}}  # noqa: RUF012 - smolagents' API
        output_type = "string"
        calls: list[str] = []  # noqa: RUF012

        def forward(self, city: str) -> str:
            self.calls.append(city)
            return f"sunny and 21 C in {city}"

    return GetWeather()


def model(llmsim: LLMSim) -> Any:
    from smolagents import OpenAIServerModel
    return OpenAIServerModel(model_id="gpt-4o", api_base=llmsim.base_url, api_key="sk-test")


def test_tools__tool_calling_agent(llmsim: LLMSim) -> None:
    from smolagents import ToolCallingAgent
    tool = weather_tool()
    agent = ToolCallingAgent(tools=[tool], model=model(llmsim), max_steps=4, verbosity_level=0)
    answer = agent.run("What is the weather in Paris?")
    assert tool.calls == ["Paris"]
    assert "sunny and 21 C in Paris" in str(answer)


def test_tools__code_agent(llmsim: LLMSim) -> None:
    from smolagents import CodeAgent
    tool = weather_tool()
    agent = CodeAgent(tools=[tool], model=model(llmsim), max_steps=4, verbosity_level=0)
    answer = agent.run("What is the weather in Paris?")
    assert tool.calls == ["Paris"]
    assert "sunny and 21 C in Paris" in str(answer)
    assert len(agent.memory.steps) <= 4  # the task, the tool step and the answer step: no retries


def test_text__code_agent_computes_without_tools(llmsim: LLMSim) -> None:
    from smolagents import CodeAgent
    agent = CodeAgent(tools=[], model=model(llmsim), max_steps=3, verbosity_level=0)
    assert agent.run("What is 6 * 7?") == 42


def user(text: str) -> Any:
    from smolagents import ChatMessage, MessageRole
    return ChatMessage(role=MessageRole.USER, content=[{"type": "text", "text": text}])


def test_streaming__model(llmsim: LLMSim) -> None:
    deltas = [delta.content for delta in model(llmsim).generate_stream([user("Tell me a story.")]) if delta.content]
    assert len(deltas) > 1 and last(llmsim)["stream"] is True


def test_client_history__model(llmsim: LLMSim) -> None:
    from smolagents import ChatMessage, MessageRole
    chat, messages = model(llmsim), [user("My name is Ada. Remember it.")]
    first = chat.generate(messages)
    messages += [ChatMessage(role=MessageRole.ASSISTANT, content=[{"type": "text", "text": first.content}]),
                 user("What is my name?")]
    assert chat.generate(messages).content
    assert "My name is Ada" in texts(last(llmsim)["messages"])


def test_structured__model(llmsim: LLMSim) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "population": {"type": "integer"}},
              "required": ["name", "population"], "additionalProperties": False}
    answer = model(llmsim).generate([user("Describe Paris.")], response_format={
        "type": "json_schema", "json_schema": {"name": "city", "schema": schema, "strict": True}})
    city = json.loads(answer.content or "")
    assert isinstance(city["name"], str) and isinstance(city["population"], int)


def test_retry__model(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)  # the openai client under the model retries it (smolagents' own waits 60 s)
    assert model(llmsim).generate([user("hi")]).content
    retried(llmsim)
