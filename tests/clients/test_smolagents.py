"""smolagents against the plain simulator, with no scenario: a ToolCallingAgent and a CodeAgent each call the
tool with the question's argument and end their loop with a final answer built from its result."""

from __future__ import annotations

from typing import Any

from llmsim.pytest_plugin import LLMSim

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
