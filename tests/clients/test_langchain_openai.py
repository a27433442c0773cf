"""langchain-openai's ChatOpenAI, on the Responses API and on Chat Completions, with its own defaults."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import pytest
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("langchain_openai")

if TYPE_CHECKING:
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langchain_openai import ChatOpenAI

CLIENT = "langchain-openai"


@pytest.fixture(scope="module", autouse=True)
def _langchain() -> None:
    """Imported when the module's tests run, not at collection: every xdist process collects every module, and
    langchain-openai costs a core ~1 s to import."""
    global AIMessage, HumanMessage, ToolMessage, ChatOpenAI, get_weather
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    @tool
    def get_weather(city: str) -> str:
        """Get the current weather in a city."""
        return f"It is sunny and 22 C in {city}."


APIS = pytest.mark.parametrize("responses", [True, False], ids=["responses", "chat"])


def chat_model(llmsim: LLMSim, responses: bool = True, model: str = "gpt-4o", **options: object) -> ChatOpenAI:
    return ChatOpenAI(model=model, base_url=llmsim.base_url, api_key="sk-test", use_responses_api=responses,
                      **options)


def sent_on(llmsim: LLMSim, responses: bool) -> None:
    assert ("input" in last(llmsim)) is responses and ("messages" in last(llmsim)) is not responses


class City(BaseModel):
    name: str
    country: str
    population: int


get_weather: BaseTool  # made by _langchain


@APIS
def test_text(llmsim: LLMSim, responses: bool) -> None:
    reply = chat_model(llmsim, responses).invoke("What is the capital of France?")
    assert isinstance(reply, AIMessage) and reply.text.strip()
    assert reply.usage_metadata and reply.usage_metadata["output_tokens"] > 0
    sent_on(llmsim, responses)


@APIS
def test_streaming(llmsim: LLMSim, responses: bool) -> None:
    chunks = list(chat_model(llmsim, responses).stream("Tell me a story about a lighthouse."))
    assert sum(bool(chunk.text) for chunk in chunks) > 1
    assert "".join(chunk.text for chunk in chunks).strip()
    assert last(llmsim)["stream"] is True
    sent_on(llmsim, responses)


def test_server_state(llmsim: LLMSim) -> None:
    model = chat_model(llmsim, use_previous_response_id=True)
    question = HumanMessage("My name is Ada. Remember it.")
    first = model.invoke([question])
    second = model.invoke([question, first, HumanMessage("What is my name?")])
    assert second.text.strip()
    body = last(llmsim)
    assert body["previous_response_id"] == first.response_metadata["id"]
    assert "Ada" not in texts(body["input"])  # only the new turn travels


@APIS
def test_client_history(llmsim: LLMSim, responses: bool) -> None:
    model = chat_model(llmsim, responses)
    question = HumanMessage("My name is Ada. Remember it.")
    first = model.invoke([question])
    second = model.invoke([question, first, HumanMessage("What is my name?")])
    assert second.text.strip()
    sent = texts(last(llmsim)["input" if responses else "messages"])
    assert "My name is Ada" in sent and first.text.strip()[:40] in sent


@APIS
def test_tools(llmsim: LLMSim, responses: bool) -> None:
    model = chat_model(llmsim, responses).bind_tools([get_weather])
    history: list = [HumanMessage("What's the weather in Paris?")]
    call = model.invoke(history)
    assert [c["name"] for c in call.tool_calls] == ["get_weather"]
    assert call.tool_calls[0]["args"]["city"]
    history += [call, *(ToolMessage(get_weather.invoke(c["args"]), tool_call_id=c["id"]) for c in call.tool_calls)]
    answer = model.invoke(history)
    assert not answer.tool_calls and "sunny and 22 C" in answer.text


@APIS
@pytest.mark.parametrize("method", ["json_schema", "function_calling", "json_mode"])
def test_structured(llmsim: LLMSim, responses: bool, method: Literal["json_schema", "function_calling", "json_mode"]
                    ) -> None:
    model = chat_model(llmsim, responses).with_structured_output(City, method=method)
    prompt = "Describe Paris."
    if method == "json_mode":  # LangChain's docs: the prompt must spell out the keys
        prompt += ' Answer in JSON with the keys "name" (string), "country" (string) and "population" (integer).'
    city = model.invoke(prompt)
    assert isinstance(city, City) and city.name and city.country


def test_reasoning(llmsim: LLMSim) -> None:
    model = chat_model(llmsim, model="gpt-5", reasoning={"effort": "low", "summary": "auto"})
    reply = model.invoke("What is 17 * 23?")
    kinds = [block.get("type") for block in reply.content_blocks]
    assert "reasoning" in kinds and "text" in kinds
    assert reply.usage_metadata["output_token_details"]["reasoning"] > 0


def test_reasoning__tool_loop(llmsim: LLMSim) -> None:
    model = chat_model(llmsim, model="gpt-5", reasoning={"effort": "low", "summary": "auto"}).bind_tools(
        [get_weather])
    history: list = [HumanMessage("What's the weather in Paris?")]
    call = model.invoke(history)
    assert call.tool_calls
    history += [call, *(ToolMessage(get_weather.invoke(c["args"]), tool_call_id=c["id"]) for c in call.tool_calls)]
    assert "sunny and 22 C" in model.invoke(history).text


@APIS
def test_retry(llmsim: LLMSim, responses: bool) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    reply = chat_model(llmsim, responses).invoke("hi")  # ChatOpenAI's default max_retries
    assert reply.text.strip()
    retried(llmsim)
