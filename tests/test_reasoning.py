"""Reasoning efforts, summaries and their gating per model, as the real API applies them."""

from __future__ import annotations

import openai
import pytest

from llmsim.backends.sim.backend import REASONING_MULTIPLIER, SUMMARY_SHARE

MODEL_EFFORTS = {
    "o3": ["low", "medium", "high"],
    "o4-mini": ["low", "medium", "high"],
    "gpt-5": ["minimal", "low", "medium", "high"],
    "gpt-5-mini": ["minimal", "low", "medium", "high"],
    "gpt-5.1": ["none", "low", "medium", "high"],
    "gpt-5.2": ["none", "low", "medium", "high", "xhigh"],
}
CASES = [(model, effort) for model, efforts in MODEL_EFFORTS.items() for effort in efforts]


@pytest.mark.parametrize(("model", "effort"), CASES)
@pytest.mark.parametrize("summary", [None, "concise", "auto", "detailed"])
def test_effort_and_summary(client: openai.OpenAI, model: str, effort: str, summary: str | None) -> None:
    reasoning = {"effort": effort} | ({"summary": summary} if summary else {})
    response = client.responses.create(model=model, input="Why is the sky blue?", reasoning=reasoning,
                                       extra_headers={"X-LLMSim-Seed": "3"})
    usage = response.usage
    visible = usage.output_tokens - usage.output_tokens_details.reasoning_tokens
    assert response.reasoning.effort == effort and response.reasoning.summary == summary
    if effort == "none":
        assert [item.type for item in response.output] == ["message"]
        assert usage.output_tokens_details.reasoning_tokens == 0
        return
    reasoning_item, message = response.output
    assert reasoning_item.type == "reasoning" and reasoning_item.id.startswith("rs_")
    assert message.type == "message"
    reasoning_tokens = usage.output_tokens_details.reasoning_tokens
    assert reasoning_tokens == pytest.approx(REASONING_MULTIPLIER[effort] * visible, abs=1)
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    if summary is None:
        assert reasoning_item.summary == []
    else:
        words = len(reasoning_item.summary[0].text.split())
        assert words == max(1, round(SUMMARY_SHARE[summary] * reasoning_tokens))


def test_effort_scales_reasoning(client: openai.OpenAI) -> None:
    ratios = []
    for effort in ["low", "medium", "high"]:
        usage = client.responses.create(model="o3", input="Plan a trip", reasoning={"effort": effort}).usage
        ratios.append(usage.output_tokens_details.reasoning_tokens / (usage.output_tokens -
                                                                       usage.output_tokens_details.reasoning_tokens))
    assert ratios == sorted(ratios) and ratios[0] < ratios[-1]


@pytest.mark.parametrize(("model", "default"), [("o3", "medium"), ("gpt-5", "medium"), ("gpt-5.1", "none")])
def test_default_effort(client: openai.OpenAI, model: str, default: str) -> None:
    response = client.responses.create(model=model, input="hi")
    assert response.reasoning.effort == default
    assert (response.output[0].type == "reasoning") == (default != "none")


def test_summary_streams_the_reasoning_summary_events(client: openai.OpenAI) -> None:
    events = list(client.responses.create(model="o3", input="hi", stream=True, reasoning={"summary": "detailed"}))
    kinds = [e.type for e in events]
    for kind in ["response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
                 "response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]:
        assert kind in kinds
    done = next(e for e in events if e.type == "response.reasoning_summary_text.done")
    assert done.text == "".join(e.delta for e in events if e.type == "response.reasoning_summary_text.delta")
    assert done.output_index == 0 and done.summary_index == 0


@pytest.mark.parametrize(("model", "reasoning", "param", "code"), [
    ("gpt-4o", {"effort": "low"}, "reasoning.effort", "unsupported_parameter"),
    ("gpt-4.1", {"effort": "high"}, "reasoning.effort", "unsupported_parameter"),
    ("gpt-4o-mini", {"summary": "auto"}, "reasoning.summary", "unsupported_parameter"),
    ("o3", {"effort": "minimal"}, "reasoning.effort", "unsupported_value"),
    ("o3", {"effort": "none"}, "reasoning.effort", "unsupported_value"),
    ("gpt-5", {"effort": "xhigh"}, "reasoning.effort", "unsupported_value"),
    ("gpt-5", {"effort": "none"}, "reasoning.effort", "unsupported_value"),
    ("gpt-5.1", {"effort": "minimal"}, "reasoning.effort", "unsupported_value"),
    ("gpt-5.1", {"effort": "xhigh"}, "reasoning.effort", "unsupported_value"),
])
def test_effort_gating(client: openai.OpenAI, model: str, reasoning: dict, param: str, code: str) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model=model, input="hi", reasoning=reasoning)
    assert error.value.status_code == 400
    assert (error.value.body["param"], error.value.body["code"]) == (param, code)
    assert error.value.body["type"] == "invalid_request_error"


def test_sampling_parameters_on_reasoning_models(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model="o3", input="hi", temperature=0.2)
    assert error.value.body["message"] == ("Unsupported value: 'temperature' does not support 0.2 with this model. "
                                           "Only the default (1) value is supported.")
    for model in ("o3", "gpt-5"):  # the default value is accepted, on both APIs (issue 32, finding 4)
        assert client.responses.create(model=model, input="hi", temperature=1, top_p=1).status == "completed"
        assert client.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}],
                                              temperature=1, top_p=1.0).choices[0].message.content
    with pytest.raises(openai.BadRequestError) as chat_error:
        client.chat.completions.create(model="gpt-5", messages=[{"role": "user", "content": "hi"}], temperature=0.5)
    assert chat_error.value.body["code"] == "unsupported_value" and chat_error.value.body["param"] == "temperature"
    with pytest.raises(openai.BadRequestError):
        client.responses.create(model="gpt-5.2", input="hi", top_p=0.5, reasoning={"effort": "high"})
    allowed = client.responses.create(model="gpt-5.2", input="hi", temperature=0.2, reasoning={"effort": "none"})
    assert allowed.temperature == 0.2
