"""LangChain's and LangGraph's own docs examples against the plain simulator, unscripted: `json_mode` with the
keys named in words gets values of the types the model declares (`rating: Optional[int]` an int, not a sentence),
and the LangGraph agent asked "what is the weather in sf" calls its tool with `sf`, the user's own word."""

from __future__ import annotations

from typing import Literal, Optional

import pytest
from pydantic import BaseModel, Field

from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("langchain_openai", "langchain")


class Joke(BaseModel):  # LangChain's structured-output docs, as written there
    setup: str = Field(description="The setup of the joke")
    punchline: str = Field(description="The punchline to the joke")
    rating: Optional[int] = Field(default=None, description="How funny the joke is, from 1 to 10")  # noqa: UP045


def chat_model(llmsim: LLMSim, responses: bool = False):  # type: ignore[no-untyped-def]
    from langchain_openai import ChatOpenAI
    return ChatOpenAI(model="gpt-4o", base_url=llmsim.base_url, api_key="sk-test", use_responses_api=responses,
                      max_retries=0)


@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_json_mode_types_the_keys_named_in_words(llmsim: LLMSim, responses: bool) -> None:
    structured = chat_model(llmsim, responses).with_structured_output(Joke, method="json_mode")
    joke = structured.invoke("Tell me a joke about cats, respond in JSON with `setup`, `punchline`, and `rating` keys")
    assert isinstance(joke, Joke) and joke.setup and joke.punchline
    assert isinstance(joke.rating, int)  # was a sentence, which pydantic refused
    raw = chat_model(llmsim, responses).bind(response_format={"type": "json_object"}).invoke(
        "Is this email spam? Respond in JSON with the keys 'is_spam' and 'confidence' (number).")
    assert '"is_spam": ' in str(raw.content)
    assert str(raw.content).split('"is_spam": ')[1].startswith(("true", "false"))


def get_weather(city: str) -> str:  # LangGraph's quickstart
    """Get weather for a given city."""
    return f"It's always sunny in {city}!"


def get_weather_choice(city: Literal["nyc", "sf"]) -> str:  # LangGraph's ReAct agent how-to
    """Use this to get weather information."""
    return "It's always sunny in sf" if city == "sf" else "It might be cloudy in nyc"


@pytest.mark.parametrize("tool", [get_weather, get_weather_choice], ids=["str", "literal"])
def test_langgraph_docs_example_gets_sf(llmsim: LLMSim, tool) -> None:  # type: ignore[no-untyped-def]
    from langchain.agents import create_agent  # LangGraph's agent, where its docs now import it from
    agent = create_agent(model=chat_model(llmsim), tools=[tool], system_prompt="You are a helpful assistant")
    result = agent.invoke({"messages": [{"role": "user", "content": "what is the weather in sf"}]})
    calls = [call for message in result["messages"] for call in getattr(message, "tool_calls", None) or []]
    assert [(call["name"], call["args"]) for call in calls] == [(tool.__name__, {"city": "sf"})]
    assert "sunny in sf" in result["messages"][-1].content  # the answer quotes the tool's result
