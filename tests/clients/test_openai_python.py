"""The official Python `openai` SDK as its docs write it, one matrix cell per test (Responses API, and Chat
Completions where its loop differs); its defaults (two retries) untouched."""

from __future__ import annotations

import json

import openai
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim

CLIENT = "openai (Python)"

WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Get the current weather in a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                               "additionalProperties": False}, "strict": True}


class City(BaseModel):
    name: str
    country: str
    population: int


def client(llmsim: LLMSim) -> openai.OpenAI:
    return openai.OpenAI(base_url=llmsim.base_url, api_key="sk-test")


def weather(city: str) -> str:
    return f"It is sunny and 22 C in {city}."


def test_text(llmsim: LLMSim) -> None:
    response = client(llmsim).responses.create(model="gpt-4o", input="What is the capital of France?")
    assert response.status == "completed" and response.output_text.strip()
    chat = client(llmsim).chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert chat.choices[0].message.content and chat.choices[0].message.content.strip()


def test_streaming(llmsim: LLMSim) -> None:
    with client(llmsim).responses.stream(model="gpt-4o", input="Tell me a story.") as stream:
        deltas = [event.delta for event in stream if event.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert len(deltas) > 1 and "".join(deltas) == final.output_text and last(llmsim)["stream"] is True


def test_server_state(llmsim: LLMSim) -> None:
    first = client(llmsim).responses.create(model="gpt-4o", input="My name is Ada. Remember it.")
    second = client(llmsim).responses.create(model="gpt-4o", input="What is my name?", previous_response_id=first.id)
    assert second.previous_response_id == first.id
    assert last(llmsim)["previous_response_id"] == first.id and "Ada" not in texts(last(llmsim)["input"])


def test_client_history(llmsim: LLMSim) -> None:
    messages: list[dict[str, str]] = [{"role": "user", "content": "My name is Ada. Remember it."}]
    first = client(llmsim).chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
    messages += [{"role": "assistant", "content": first.choices[0].message.content or ""},
                 {"role": "user", "content": "What is my name?"}]
    client(llmsim).chat.completions.create(model="gpt-4o", messages=messages)  # type: ignore[arg-type]
    assert "My name is Ada" in texts(last(llmsim)["messages"])


def test_tools(llmsim: LLMSim) -> None:
    items: list = [{"role": "user", "content": "What's the weather in Paris?"}]
    first = client(llmsim).responses.create(model="gpt-4o", input=items, tools=[WEATHER_TOOL])  # type: ignore[list-item]
    calls = [item for item in first.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["get_weather"]
    items += first.output
    items += [{"type": "function_call_output", "call_id": call.call_id,
               "output": weather(json.loads(call.arguments)["city"])} for call in calls]
    final = client(llmsim).responses.create(model="gpt-4o", input=items, tools=[WEATHER_TOOL])  # type: ignore[list-item]
    assert "sunny and 22 C" in final.output_text and "sunny and 22 C" in texts(last(llmsim)["input"])


def test_structured(llmsim: LLMSim) -> None:
    response = client(llmsim).responses.parse(model="gpt-4o", input="Describe Paris.", text_format=City)
    assert isinstance(response.output_parsed, City) and response.output_parsed.name
    assert last(llmsim)["text"]["format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim) -> None:
    response = client(llmsim).responses.create(model="gpt-5", input="What is 17 * 23?",
                                               reasoning={"effort": "low", "summary": "auto"})
    assert [item.type for item in response.output].count("reasoning") == 1
    assert response.usage and response.usage.output_tokens_details.reasoning_tokens > 0
    assert response.output_text.strip()


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    response = client(llmsim).responses.create(model="gpt-4o", input="hi")
    assert response.status == "completed"
    retried(llmsim)
