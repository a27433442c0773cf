"""LangChain's ChatAnthropic and pydantic-ai's Anthropic model against LLMSim's Messages API: text, streaming and
a tool loop each (the framework runs the tool and sends its result back)."""

from __future__ import annotations

import asyncio
from typing import Any

from clientkit import texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("langchain_anthropic", "pydantic_ai")

MODEL = "claude-sonnet-4-6"


def weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"It is sunny and 22 C in {city}."


def chat_anthropic(llmsim: LLMSim) -> Any:
    from langchain_anthropic import ChatAnthropic

    return ChatAnthropic(model=MODEL, base_url=llmsim.server.url, api_key="sk-ant-test", max_tokens=500,
                         max_retries=0)


def test_langchain_text(llmsim: LLMSim) -> None:
    reply = chat_anthropic(llmsim).invoke("What is the capital of France?")
    assert reply.text.strip() and reply.usage_metadata["output_tokens"] > 0
    assert reply.response_metadata["stop_reason"] == "end_turn"


def test_langchain_streaming(llmsim: LLMSim) -> None:
    chunks = list(chat_anthropic(llmsim).stream("Tell me a story."))
    assert len(chunks) > 2 and "".join(chunk.text for chunk in chunks).strip()
    assert llmsim.requests[-1]["stream"] is True


def test_langchain_tool_loop(llmsim: LLMSim) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage
    from langchain_core.tools import tool

    get_weather = tool(weather)
    model = chat_anthropic(llmsim).bind_tools([get_weather], tool_choice="any")
    messages: list[Any] = [HumanMessage("What's the weather in Paris?")]
    first = model.invoke(messages)
    assert first.tool_calls and first.tool_calls[0]["name"] == "weather"
    messages += [first, *[ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])
                          for call in first.tool_calls]]
    final = chat_anthropic(llmsim).bind_tools([get_weather]).invoke(messages)
    assert final.text.strip() and not final.tool_calls
    assert "sunny and 22 C" in texts(llmsim.requests[-1]["messages"][-1]["content"])


def pydantic_agent(llmsim: LLMSim, **options: Any) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(base_url=llmsim.server.url, api_key="sk-ant-test")
    return Agent(AnthropicModel(MODEL, provider=provider), **options)


def test_pydantic_ai_text(llmsim: LLMSim) -> None:
    result = pydantic_agent(llmsim).run_sync("What is the capital of France?")
    assert result.output.strip() and result.usage.output_tokens > 0


def test_pydantic_ai_streaming(llmsim: LLMSim) -> None:
    async def run() -> list[str]:
        async with pydantic_agent(llmsim).run_stream("Tell me a story.") as result:
            return [delta async for delta in result.stream_text(delta=True, debounce_by=None)]

    deltas = asyncio.run(run())
    assert len(deltas) > 1 and "".join(deltas).strip()
    assert llmsim.requests[-1]["stream"] is True


def test_pydantic_ai_tool_loop(llmsim: LLMSim) -> None:
    agent = pydantic_agent(llmsim)
    agent.tool_plain(weather)
    llmsim.load_scenario({"turns": [{"tool_calls": [{"name": "weather", "arguments": {"city": "Paris"}}]}],
                          "on_exhausted": "simulate"})
    result = agent.run_sync("What's the weather in Paris?")
    assert "sunny and 22 C" in texts(llmsim.requests[-1]["messages"][-1]["content"])
    assert result.output.strip() and len(llmsim.requests) == 2
