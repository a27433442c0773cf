"""litellm: `litellm.responses` and `litellm.completion` (with the tool loop of its docs), model `openai/...`."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import pytest
from pydantic import BaseModel

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("litellm")

if TYPE_CHECKING:
    import litellm

CLIENT = "litellm"


@pytest.fixture(scope="module", autouse=True)
def _litellm() -> None:
    """Imported when the module's tests run, not at collection: every xdist process collects every module, and
    litellm costs a core ~3 s to import."""
    global litellm
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # its bundled price list: no download at import
    import litellm


class City(BaseModel):
    name: str
    country: str
    population: int


WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def get_weather(city: str) -> str:
    return f"It is sunny and 22 C in {city}."


def server(llmsim: LLMSim) -> dict[str, str]:
    return {"api_base": llmsim.base_url, "api_key": "sk-test"}


def test_text(llmsim: LLMSim) -> None:
    response = litellm.responses(model="openai/gpt-4o", input="What is the capital of France?", **server(llmsim))
    assert response.status == "completed" and response.output[0].content[0].text.strip()
    completion = litellm.completion(model="openai/gpt-4o", **server(llmsim),
                                    messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert completion.choices[0].message.content.strip() and completion.usage.completion_tokens > 0


def test_streaming(llmsim: LLMSim) -> None:
    chunks = list(litellm.completion(model="openai/gpt-4o", stream=True, **server(llmsim),
                                     messages=[{"role": "user", "content": "Tell me a story."}]))
    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(deltas) > 1 and last(llmsim)["stream"] is True
    events = list(litellm.responses(model="openai/gpt-4o", input="Tell me a story.", stream=True, **server(llmsim)))
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    done = [e for e in events if e.type == "response.completed"]
    assert len(done) == 1 and text and done[0].response.output[0].content[0].text == text


def test_server_state(llmsim: LLMSim) -> None:
    first = litellm.responses(model="openai/gpt-4o", input="My name is Ada. Remember it.", **server(llmsim))
    second = litellm.responses(model="openai/gpt-4o", input="What is my name?", previous_response_id=first.id,
                               **server(llmsim))
    assert second.status == "completed"
    body = last(llmsim)
    assert body["previous_response_id"].startswith("resp_") and "Ada" not in texts(body["input"])


def test_client_history(llmsim: LLMSim) -> None:
    messages = [{"role": "user", "content": "My name is Ada. Remember it."}]
    first = litellm.completion(model="openai/gpt-4o", messages=messages, **server(llmsim))
    messages += [first.choices[0].message, {"role": "user", "content": "What is my name?"}]
    assert litellm.completion(model="openai/gpt-4o", messages=messages, **server(llmsim)).choices[0].message.content
    sent = texts(last(llmsim)["messages"])
    assert "My name is Ada" in sent and first.choices[0].message.content[:40] in sent


def test_tools__completion(llmsim: LLMSim) -> None:
    # https://docs.litellm.ai/docs/completion/function_call: append the response message, then one
    # {"tool_call_id", "role": "tool", "name", "content"} per call, and complete again.
    messages = [{"role": "user", "content": "What's the weather in Paris?"}]
    response = litellm.completion(model="openai/gpt-4o", messages=messages, tools=[WEATHER_TOOL], **server(llmsim))
    message = response.choices[0].message
    assert message.tool_calls and message.tool_calls[0].function.name == "get_weather"
    messages.append(message)
    for call in message.tool_calls:
        messages.append({"tool_call_id": call.id, "role": "tool", "name": call.function.name,
                         "content": get_weather(**json.loads(call.function.arguments))})
    final = litellm.completion(model="openai/gpt-4o", messages=messages, tools=[WEATHER_TOOL], **server(llmsim))
    assert "sunny and 22 C" in final.choices[0].message.content


def test_tools__responses(llmsim: LLMSim) -> None:
    tool = {"type": "function", **WEATHER_TOOL["function"]}
    first = litellm.responses(model="openai/gpt-4o", input="What's the weather in Paris?", tools=[tool],
                              **server(llmsim))
    calls = [item for item in first.output if item.type == "function_call"]
    assert [call.name for call in calls] == ["get_weather"]
    outputs = [{"type": "function_call_output", "call_id": call.call_id,
                "output": get_weather(**json.loads(call.arguments))} for call in calls]
    final = litellm.responses(model="openai/gpt-4o", input=outputs, previous_response_id=first.id, tools=[tool],
                              **server(llmsim))
    assert "sunny and 22 C" in final.output[-1].content[0].text


def test_structured(llmsim: LLMSim) -> None:
    response = litellm.completion(model="openai/gpt-4o", response_format=City, **server(llmsim),
                                  messages=[{"role": "user", "content": "Describe Paris."}])
    city = City.model_validate_json(response.choices[0].message.content)
    assert city.name and last(llmsim)["response_format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim) -> None:
    response = litellm.responses(model="openai/gpt-5", input="What is 17 * 23?", **server(llmsim),
                                 reasoning={"effort": "low", "summary": "auto"})
    reasoning = [item for item in response.output if item.type == "reasoning"]
    assert reasoning and reasoning[0].summary and response.usage.output_tokens_details.reasoning_tokens > 0
    completion = litellm.completion(model="openai/gpt-5", reasoning_effort="low", **server(llmsim),
                                    messages=[{"role": "user", "content": "What is 17 * 23?"}])
    assert completion.usage.completion_tokens_details.reasoning_tokens > 0
    assert last(llmsim)["reasoning_effort"] == "low"


def test_retry(llmsim: LLMSim) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    completion = litellm.completion(model="openai/gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                    num_retries=2, **server(llmsim))
    assert completion.choices[0].message.content
    retried(llmsim)
