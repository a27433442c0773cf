"""haystack (`haystack-ai`): OpenAIChatGenerator (Chat Completions) and OpenAIResponsesChatGenerator (the
Responses API) with `api_base_url`, and its ToolInvoker for the tool loop. Heavy imports stay inside the tests."""

from __future__ import annotations

import json
import os
from typing import Any

from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("haystack")

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # its usage statistics would try to go online

CLIENT = "haystack"


class City(BaseModel):
    name: str
    country: str
    population: int


def get_weather(city: str) -> str:
    return f"It is sunny and 22 C in {city}."


def generator(llmsim: LLMSim, responses: bool = False, **options: Any) -> Any:
    from haystack.components.generators.chat import OpenAIChatGenerator, OpenAIResponsesChatGenerator
    from haystack.utils import Secret
    kind = OpenAIResponsesChatGenerator if responses else OpenAIChatGenerator
    return kind(api_key=Secret.from_token("sk-test"), api_base_url=llmsim.base_url,
                **{"model": "gpt-4o", **options})


def user(text: str) -> Any:
    from haystack.dataclasses import ChatMessage
    return ChatMessage.from_user(text)


def test_text(llmsim: LLMSim) -> None:
    for responses in (False, True):
        reply = generator(llmsim, responses).run(messages=[user("What is the capital of France?")])["replies"][0]
        assert reply.text and reply.text.strip()
        assert ("input" if responses else "messages") in last(llmsim)


def test_streaming(llmsim: LLMSim) -> None:
    chunks: list[str] = []
    chat = generator(llmsim, streaming_callback=lambda chunk: chunks.append(chunk.content))
    reply = chat.run(messages=[user("Tell me a story.")])["replies"][0]
    assert len([c for c in chunks if c]) > 1 and "".join(chunks) == reply.text
    assert last(llmsim)["stream"] is True


def test_server_state(llmsim: LLMSim) -> None:
    chat = generator(llmsim, responses=True)
    first = chat.run(messages=[user("My name is Ada. Remember it.")])["replies"][0]
    first_id = first.meta["id"]
    chat.run(messages=[user("What is my name?")], generation_kwargs={"previous_response_id": first_id})
    assert last(llmsim)["previous_response_id"] == first_id and "Ada" not in texts(last(llmsim)["input"])


def test_client_history(llmsim: LLMSim) -> None:
    chat = generator(llmsim)
    messages = [user("My name is Ada. Remember it.")]
    messages += chat.run(messages=messages)["replies"]
    messages.append(user("What is my name?"))
    assert chat.run(messages=messages)["replies"][0].text
    assert "My name is Ada" in texts(last(llmsim)["messages"])


def test_tools(llmsim: LLMSim) -> None:
    from haystack.components.agents import Agent
    from haystack.tools import Tool
    weather = Tool(name="get_weather", description="Get the current weather in a city.", function=get_weather,
                   parameters={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})
    for responses in (False, True):  # haystack's Agent runs the loop: the call, the tool, the answer
        agent = Agent(chat_generator=generator(llmsim, responses), tools=[weather], max_agent_steps=4)
        result = agent.run(messages=[user("What's the weather in Paris?")])
        calls = [call.tool_name for message in result["messages"] for call in message.tool_calls]
        assert calls == ["get_weather"]
        assert result["last_message"].text and "sunny and 22 C" in result["last_message"].text
        assert "sunny and 22 C" in texts(last(llmsim)["input" if responses else "messages"])


def test_structured(llmsim: LLMSim) -> None:
    reply = generator(llmsim).run(messages=[user("Describe Paris.")],
                                  generation_kwargs={"response_format": City})["replies"][0]
    assert City.model_validate(json.loads(reply.text)).name
    assert last(llmsim)["response_format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim) -> None:
    chat = generator(llmsim, responses=True, model="gpt-5",
                     generation_kwargs={"reasoning": {"effort": "low", "summary": "auto"}})
    reply = chat.run(messages=[user("What is 17 * 23?")])["replies"][0]
    assert reply.reasoning and reply.reasoning.reasoning_text.strip() and reply.text.strip()
    assert last(llmsim)["reasoning"]["effort"] == "low"


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    assert generator(llmsim, max_retries=2).run(messages=[user("hi")])["replies"][0].text
    retried(llmsim)
