"""Google's clients against LLMSim's Gemini API with no scenario: an ADK agent on a native Gemini model calls its
tool and answers from the result; LangChain's ChatGoogleGenerativeAI answers, streams, runs a tool round trip and
gives structured output; GoogleGenerativeAIEmbeddings retrieves the document that answers a question."""

from __future__ import annotations

import asyncio
import importlib.util
import os
from urllib.parse import urlsplit

import numpy as np
import pytest
from pydantic import BaseModel

from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("langchain_google_genai")  # looked up, not imported: the import costs ~1.5 s in each process
KEY = "goog-llmsim"
DOCUMENTS = ["Paris is the capital of France.", "The mitochondria is the powerhouse of the cell.",
             "Python was created by Guido van Rossum."]
calls: list[str] = []


def root(llmsim: LLMSim) -> str:
    """The server's address: Google's clients add the API version themselves."""
    parsed = urlsplit(llmsim.base_url)
    return f"{parsed.scheme}://{parsed.netloc}"


def get_weather(city: str) -> str:
    """Get the current weather in a city.

    Args:
        city: the city's name
    """
    calls.append(city)
    return f"sunny and 21 C in {city}"


@pytest.mark.skipif(importlib.util.find_spec("google.adk") is None,
                    reason="install google-adk with pip install --no-deps (it pins google-genai<3)")
def test_adk_agent_on_a_native_gemini_model(llmsim: LLMSim, monkeypatch: pytest.MonkeyPatch) -> None:
    from google.adk.agents import Agent
    from google.adk.models.google_llm import Gemini
    from google.adk.runners import InMemoryRunner
    from google.genai import types

    monkeypatch.setenv("GOOGLE_API_KEY", KEY)
    monkeypatch.delenv("GOOGLE_GENAI_USE_VERTEXAI", raising=False)
    agent = Agent(name="weather", model=Gemini(model="gemini-2.5-flash", base_url=root(llmsim)),
                  instruction="Answer with the weather tool.", tools=[get_weather])
    runner = InMemoryRunner(agent=agent, app_name="llmsim")
    calls.clear()

    async def run() -> list[str]:
        session = await runner.session_service.create_session(app_name="llmsim", user_id="u")
        said = []
        async for event in runner.run_async(user_id="u", session_id=session.id, new_message=types.Content(
                role="user", parts=[types.Part(text="What is the weather in Paris?")])):
            said.extend(part.text for part in (event.content.parts if event.content else []) or []
                        if part.text and not part.thought)
        return said

    said = asyncio.run(run())
    assert calls == ["Paris"]
    assert said and said[-1].strip()
    assert os.environ["GOOGLE_API_KEY"] == KEY


def chat(llmsim: LLMSim, **options: object):  # type: ignore[no-untyped-def]
    from langchain_google_genai import ChatGoogleGenerativeAI

    return ChatGoogleGenerativeAI(model="gemini-2.5-flash", google_api_key=KEY, base_url=root(llmsim),
                                  **options)  # type: ignore[arg-type]


def test_langchain_chat_answers_and_streams(llmsim: LLMSim) -> None:
    llm = chat(llmsim)
    answer = llm.invoke("What is the capital of France?")
    assert answer.text and answer.usage_metadata["input_tokens"] > 0 and answer.usage_metadata["output_tokens"] > 0
    pieces = [chunk.text for chunk in llm.stream("Tell me about Paris")]
    assert len(pieces) >= 2 and "".join(pieces).strip()


def test_langchain_tool_round_trip(llmsim: LLMSim) -> None:
    from langchain_core.messages import HumanMessage, ToolMessage

    llm = chat(llmsim).bind_tools([get_weather])
    question = HumanMessage("What is the weather in Paris?")
    first = llm.invoke([question])
    assert first.tool_calls and first.tool_calls[0]["name"] == "get_weather"
    call = first.tool_calls[0]
    result = ToolMessage(get_weather(**call["args"]), tool_call_id=call["id"])
    final = llm.invoke([question, first, result])
    assert final.text and not final.tool_calls


class City(BaseModel):
    name: str
    country: str
    population: int


def test_langchain_structured_output(llmsim: LLMSim) -> None:
    city = chat(llmsim).with_structured_output(City).invoke("Describe Paris")
    assert isinstance(city, City) and city.name and isinstance(city.population, int)


def test_langchain_embeddings_retrieve_the_answer(llmsim: LLMSim) -> None:
    from langchain_google_genai import GoogleGenerativeAIEmbeddings

    embedder = GoogleGenerativeAIEmbeddings(model="gemini-embedding-001", google_api_key=KEY,  # type: ignore[arg-type]
                                            base_url=root(llmsim))
    documents = np.array(embedder.embed_documents(DOCUMENTS))
    question = np.array(embedder.embed_query("Who created Python?"))
    assert documents.shape == (3, 3072)
    assert int(np.argmax(documents @ question)) == 2
