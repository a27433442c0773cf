"""The output parser on scripted text, fed in every chunk size: markers split across tokens never leak."""

from __future__ import annotations

import json

import pytest

from llmsim.backends.mlx.parsing import OutputParser, parse_calls
from llmsim.generation import ReasoningDelta, TextDelta, ToolArgsDelta, ToolCallStart


def run(text: str, chunk: int, **options: object) -> list[object]:
    parser = OutputParser(**options)  # type: ignore[arg-type]
    deltas: list[object] = []
    for start in range(0, len(text), chunk):
        deltas += parser.feed(text[start:start + chunk])
    return deltas + parser.close()


def summary(deltas: list[object]) -> dict[str, object]:
    """What a client would end up with: reasoning text, visible text, calls (name, parsed arguments)."""
    calls: list[list[object]] = []
    for delta in deltas:
        if isinstance(delta, ToolCallStart):
            calls.append([delta.name, ""])
        elif isinstance(delta, ToolArgsDelta):
            calls[-1][1] += delta.text
    return {
        "reasoning": "".join(d.text for d in deltas if isinstance(d, ReasoningDelta)),
        "summary": "".join(d.summary for d in deltas if isinstance(d, ReasoningDelta)),
        "text": "".join(d.text for d in deltas if isinstance(d, TextDelta)),
        "calls": [(name, json.loads(args)) for name, args in calls],
    }


CHUNKS = [1, 2, 3, 5, 8, 1000]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_thinking_then_answer(chunk: int) -> None:
    out = summary(run("<think>\nFirst, add. Then check. Done!\n</think>\n\nThe answer is 4.", chunk,
                      summary="concise"))
    assert out == {"reasoning": "First, add. Then check. Done!", "summary": "First, add.",
                   "text": "The answer is 4.", "calls": []}


@pytest.mark.parametrize("chunk", CHUNKS)
def test_thinking_opened_by_the_prompt(chunk: int) -> None:
    out = summary(run("Hmm, 2+2.</think>4", chunk, in_think=True))
    assert (out["reasoning"], out["text"]) == ("Hmm, 2+2.", "4")


@pytest.mark.parametrize("chunk", CHUNKS)
def test_hermes_tool_calls_after_text(chunk: int) -> None:
    text = ('Let me check.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>\n'
            '<tool_call>\n{"name": "get_time", "arguments": {"tz": "CET"}}\n</tool_call>')
    out = summary(run(text, chunk, tools=True))
    assert out["text"] == "Let me check."
    assert out["calls"] == [("get_weather", {"city": "Paris"}), ("get_time", {"tz": "CET"})]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_mistral_tool_calls(chunk: int) -> None:
    array = run('[TOOL_CALLS][{"name": "a", "arguments": {"x": 1}}, {"name": "b", "arguments": {}}]', chunk,
                tools=True)
    headers = run('[TOOL_CALLS]a[ARGS]{"x": 1}[TOOL_CALLS]b[ARGS]{}', chunk, tools=True)
    assert summary(array)["calls"] == [("a", {"x": 1}), ("b", {})]
    assert summary(headers)["calls"] == [("a", {"x": 1}), ("b", {})]


@pytest.mark.parametrize("chunk", CHUNKS)
def test_llama3_tool_calls(chunk: int) -> None:
    tagged = run('<|python_tag|>{"name": "search", "parameters": {"q": "mlx"}}', chunk, tools=True)
    bare = run(' {"name": "search", "parameters": {"q": "mlx"}}', chunk, tools=True)
    assert summary(tagged)["calls"] == summary(bare)["calls"] == [("search", {"q": "mlx"})]


def test_json_that_is_not_a_call_stays_text() -> None:
    assert summary(run('{"answer": 4}', 3, tools=True)) == {"reasoning": "", "summary": "", "text": '{"answer": 4}',
                                                            "calls": []}


def test_broken_tool_call_is_shown_as_text() -> None:
    assert (summary(run("<tool_call>{not json}</tool_call>", 4, tools=True))["text"]
            == "<tool_call>{not json}</tool_call>")


def test_markers_are_text_without_tools_or_thinking() -> None:
    text = "Use <tool_call> and <think> literally."
    assert summary(run(text, 2, think=None))["text"] == text


def test_partial_marker_at_the_end_is_flushed() -> None:
    assert summary(run("It ends with <thi", 1))["text"] == "It ends with <thi"


def test_parse_calls_rejects_non_calls() -> None:
    assert parse_calls('{"name": 3}') is None
    assert parse_calls("plain words") is None
    assert parse_calls('{"name": "f", "arguments": "{\\"a\\": 1}"}')[0].arguments == '{"a": 1}'  # type: ignore[index]


@pytest.mark.parametrize("text", [
    '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2], "note": "a \\"}\\" b"}}\n'
    '</tool_call>',
    '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": [1, 2], "note": "a \\"}\\" b"}}]',
    '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": [1, 2], "note": "a \\"}\\" b"}',
    '{"name": "get_weather", "parameters": {"city": "Paris", "days": [1, 2], "note": "a \\"}\\" b"}}',
])
def test_arguments_stream_as_the_model_writes_them(text: str) -> None:
    """Fed a token's worth at a time, the call starts once its name is known and its arguments arrive in
    pieces that add up to exactly the model's JSON."""
    deltas = run(text, 3, tools=True)
    pieces = [d.text for d in deltas if isinstance(d, ToolArgsDelta)]
    assert isinstance(deltas[0], ToolCallStart) and deltas[0].name == "get_weather"
    assert len(pieces) > 5
    assert json.loads("".join(pieces)) == {"city": "Paris", "days": [1, 2], "note": 'a "}" b'}
    assert not [d for d in deltas if isinstance(d, TextDelta)]
