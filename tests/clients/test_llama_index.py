"""llama-index against the plain simulator, with no scenario: a FunctionAgent (native tool calls) and a
ReActAgent (ReAct text it parses itself) each call the tool with the question's argument and answer from
its result."""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Any

import pytest

from llmsim.pytest_plugin import LLMSim

CLIENT = "llama-index"

# Not in the clients extra: its pins conflict with openai 3 (pyproject.toml says why); install it with --no-deps.
pytestmark = pytest.mark.skipif(importlib.util.find_spec("llama_index.llms.openai") is None,
                                reason="install llama-index-llms-openai with pip install --no-deps")

calls: list[str] = []


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    calls.append(city)
    return f"sunny and 21 C in {city}"


@pytest.mark.parametrize("kind", ["FunctionAgent", "ReActAgent"])
def test_tools__agent_calls_the_tool_and_answers(llmsim: LLMSim, kind: str) -> None:
    from llama_index.core import agent
    from llama_index.llms.openai import OpenAI

    llm = OpenAI(model="gpt-4o", api_base=llmsim.base_url, api_key="sk-test", max_retries=0)
    workflow = getattr(agent, kind)(tools=[get_weather], llm=llm)
    calls.clear()

    async def run() -> Any:
        return await workflow.run(user_msg="What is the weather in Paris?")

    result = asyncio.run(run())
    assert calls == ["Paris"]
    assert "sunny and 21 C in Paris" in str(result)
