"""llama-index against the plain simulator, with no scenario: a FunctionAgent (native tool calls) and a
ReActAgent (ReAct text it parses itself) each call the tool with the question's argument and answer from
its result; its OpenAI (Chat Completions) and OpenAIResponses LLMs fill the matrix's other cells."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

CLIENT = "llama-index"

# Not in the clients extra: its pins conflict with openai 3 (pyproject.toml says why); install it with --no-deps.
pytestmark = needs("llama_index.llms.openai", install="pip install --no-deps llama-index-llms-openai")

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


class City(BaseModel):
    name: str
    country: str
    population: int


def llm(llmsim: LLMSim, responses: bool = False, **options: Any) -> Any:
    from llama_index.llms.openai import OpenAI, OpenAIResponses
    kind = OpenAIResponses if responses else OpenAI
    return kind(**{"model": "gpt-4o", "api_base": llmsim.base_url, "api_key": "sk-test", "max_retries": 0, **options})


def user(text: str) -> Any:
    from llama_index.core.llms import ChatMessage
    return ChatMessage(role="user", content=text)


def test_text(llmsim: LLMSim) -> None:
    for responses in (False, True):
        assert llm(llmsim, responses).chat([user("What is the capital of France?")]).message.content.strip()
        assert ("input" if responses else "messages") in last(llmsim)


def test_streaming(llmsim: LLMSim) -> None:
    chunks = list(llm(llmsim).stream_chat([user("Tell me a story.")]))
    assert len(chunks) > 1 and "".join(c.delta or "" for c in chunks) == chunks[-1].message.content
    assert last(llmsim)["stream"] is True


def test_server_state(llmsim: LLMSim) -> None:
    chat = llm(llmsim, responses=True, track_previous_responses=True)
    first_id = chat.chat([user("My name is Ada. Remember it.")]).raw.id
    chat.chat([user("What is my name?")])
    assert first_id and last(llmsim)["previous_response_id"] == first_id
    assert "Ada" not in texts(last(llmsim)["input"])


def test_client_history(llmsim: LLMSim) -> None:
    chat, messages = llm(llmsim), [user("My name is Ada. Remember it.")]
    messages.append(chat.chat(messages).message)
    messages.append(user("What is my name?"))
    assert chat.chat(messages).message.content.strip()
    assert "My name is Ada" in texts(last(llmsim)["messages"])


def test_structured(llmsim: LLMSim) -> None:
    from llama_index.core.prompts import PromptTemplate
    city = llm(llmsim).structured_predict(City, PromptTemplate("Describe {city}."), city="Paris")
    assert isinstance(city, City) and city.name


def test_reasoning(llmsim: LLMSim) -> None:
    chat = llm(llmsim, responses=True, model="gpt-5", reasoning_options={"effort": "low", "summary": "auto"})
    response = chat.chat([user("What is 17 * 23?")])
    assert response.message.content.strip() and last(llmsim)["reasoning"]["effort"] == "low"
    assert any(type(block).__name__ == "ThinkingBlock" for block in response.message.blocks)


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    assert llm(llmsim, max_retries=2).chat([user("hi")]).message.content.strip()
    retried(llmsim)
