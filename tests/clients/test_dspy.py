"""dspy against the plain simulator, with no scenario: every program's loop ends in an answer dspy parses
(typed Predict outputs, ChainOfThought, ReAct with a tool, streamify), with its ChatAdapter and its
JSONAdapter, on Chat Completions and on the Responses API. Heavy imports stay inside the tests."""

from __future__ import annotations

import asyncio
from typing import Any, Literal

import pytest

from clientkit import RATE_LIMIT_ONCE, last, retried, texts
from llmsim.pytest_plugin import LLMSim
from optional import needs

pytestmark = needs("dspy")

CLIENT = "dspy"

ADAPTERS = pytest.mark.parametrize("adapter", ["chat", "json"])
APIS = pytest.mark.parametrize("api", ["chat", "responses"])


def settings(llmsim: LLMSim, adapter: str, api: str) -> dict[str, Any]:
    import dspy
    lm = dspy.LM("openai/gpt-4o-mini", api_base=llmsim.base_url, api_key="sk-test", cache=False,
                 model_type="responses" if api == "responses" else "chat", num_retries=0)
    return {"lm": lm, "adapter": dspy.ChatAdapter() if adapter == "chat" else dspy.JSONAdapter()}


def get_weather(city: str) -> str:
    """Get the current weather in a city."""
    return f"sunny and 21 C in {city}"


@ADAPTERS
@APIS
def test_structured__predict_fills_every_typed_output(llmsim: LLMSim, adapter: str, api: str) -> None:
    import dspy

    class Review(dspy.Signature):
        """Answer the question and classify its tone."""
        question: str = dspy.InputField()
        answer: int = dspy.OutputField()
        tone: Literal["positive", "negative", "neutral"] = dspy.OutputField()
        keywords: list[str] = dspy.OutputField()
        confident: bool = dspy.OutputField()
        score: float = dspy.OutputField()

    with dspy.context(**settings(llmsim, adapter, api)):
        result = dspy.Predict(Review)(question="What is 17 + 25?")
    assert result.answer == 42
    assert result.tone in ("positive", "negative", "neutral")
    assert isinstance(result.keywords, list) and all(isinstance(k, str) for k in result.keywords)
    assert isinstance(result.confident, bool) and isinstance(result.score, float)


@ADAPTERS
@APIS
def test_text__chain_of_thought_reasons_then_answers(llmsim: LLMSim, adapter: str, api: str) -> None:
    import dspy
    with dspy.context(**settings(llmsim, adapter, api)):
        result = dspy.ChainOfThought("question -> answer")(
            question="Why do volcanoes erupt near tectonic plate boundaries?")
    assert result.reasoning and "volcanoes" in result.reasoning
    assert "volcanoes" in result.answer and "tectonic plate boundaries" in result.answer


@ADAPTERS
@APIS
def test_tools__react_calls_the_tool_then_finishes(llmsim: LLMSim, adapter: str, api: str) -> None:
    import dspy
    with dspy.context(**settings(llmsim, adapter, api)):
        result = dspy.ReAct("question -> answer", tools=[get_weather], max_iters=5)(
            question="What is the weather in Paris?")
    trajectory = result.trajectory
    assert trajectory["tool_name_0"] == "get_weather" and trajectory["tool_args_0"] == {"city": "Paris"}
    assert trajectory["tool_name_1"] == "finish" and "tool_name_2" not in trajectory
    assert "sunny and 21 C in Paris" in result.answer


@ADAPTERS
@APIS
def test_streaming__streamify_ends_in_a_parsed_prediction(llmsim: LLMSim, adapter: str, api: str) -> None:
    import dspy

    async def run() -> Any:
        program = dspy.streamify(dspy.Predict("question -> answer, confidence: float"))
        final = None
        async for chunk in program(question="How do Redis streams scale?"):
            if isinstance(chunk, dspy.Prediction):
                final = chunk
        return final

    with dspy.context(**settings(llmsim, adapter, api)):
        final = asyncio.run(run())
    assert final is not None and "Redis streams" in final.answer and isinstance(final.confidence, float)


def test_text__a_scenario_wins_over_the_recognised_format(llmsim: LLMSim) -> None:
    import dspy
    scripted = "[[ ## answer ## ]]\nscripted answer\n\n[[ ## completed ## ]]"
    llmsim.load_scenario({"rules": [{"match": {"input_contains": "volcanoes"}, "text": scripted}],
                          "on_exhausted": "simulate"})
    with dspy.context(**settings(llmsim, "chat", "chat")):
        result = dspy.Predict("question -> answer")(question="Why do volcanoes erupt?")
    assert result.answer == "scripted answer"


def test_client_history__history_field(llmsim: LLMSim) -> None:
    import dspy

    class Chat(dspy.Signature):
        question: str = dspy.InputField()
        history: dspy.History = dspy.InputField()
        answer: str = dspy.OutputField()

    history = dspy.History(messages=[{"question": "My name is Ada. Remember it.", "answer": "Noted, Ada."}])
    with dspy.context(**settings(llmsim, "chat", "chat")):
        assert dspy.Predict(Chat)(question="What is my name?", history=history).answer
    assert "My name is Ada" in texts(last(llmsim)["messages"])


def test_reasoning(llmsim: LLMSim) -> None:
    import dspy
    lm = dspy.LM("openai/gpt-5", api_base=llmsim.base_url, api_key="sk-test", cache=False, num_retries=0,
                 model_type="responses", temperature=1.0, max_tokens=16000, reasoning_effort="low")  # its gpt-5 docs
    with dspy.context(lm=lm):
        assert dspy.Predict("question -> answer")(question="What is 17 * 23?").answer
    assert last(llmsim)["reasoning"]["effort"] == "low"


def test_retry(llmsim: LLMSim) -> None:
    import dspy
    llmsim.set_faults(RATE_LIMIT_ONCE)
    lm = dspy.LM("openai/gpt-4o-mini", api_base=llmsim.base_url, api_key="sk-test", cache=False, num_retries=2)
    with dspy.context(lm=lm):
        assert dspy.Predict("question -> answer")(question="What is 2 + 2?").answer
    retried(llmsim)
