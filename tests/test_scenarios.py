"""Scripted scenarios: ordered turns, rules and their matching, exhaustion policies, scripted faults and
reasoning summaries, validation on load (file, CLI and admin API). Driven through the `llmsim` fixture."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest

from llmsim.pytest_plugin import LLMSim
from llmsim.testing import ServerProcess

WEATHER = {"type": "function", "name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                          "additionalProperties": False}, "strict": True}


def ask(llmsim: LLMSim, text: str = "hello", **body: object) -> openai.types.responses.Response:
    return llmsim.client.responses.create(**{"model": "gpt-4o", "input": text, **body})


def test_turns_play_in_order_then_the_simulator_answers(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"text": "first"}, {"text": "second"}]})
    assert [ask(llmsim).output_text for _ in range(2)] == ["first", "second"]
    assert ask(llmsim).output_text not in ("first", "second", "")
    assert [entry["step"] for entry in llmsim.transcript] == ["turns[0]", "turns[1]", None]


@pytest.mark.parametrize(("policy", "expected"),
                         [("repeat_last", ["a", "b", "b", "b"]), ("cycle", ["a", "b", "a", "b"])])
def test_exhaustion_policies(llmsim: LLMSim, policy: str, expected: list[str]) -> None:
    llmsim.load_scenario({"turns": [{"text": "a"}, {"text": "b"}], "on_exhausted": policy})
    assert [ask(llmsim).output_text for _ in expected] == expected


def test_exhaustion_error_is_a_clear_400(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"name": "short", "turns": [{"text": "only"}], "on_exhausted": "error"})
    ask(llmsim)
    with pytest.raises(openai.BadRequestError) as caught:
        ask(llmsim)
    assert caught.value.code == "scenario_exhausted" and "'short'" in caught.value.body["message"]


def test_rules_match_on_input_model_metadata_and_turn(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"rules": [
        {"match": {"turn": 0}, "text": "turn zero"},
        {"match": {"input_contains": "PING"}, "text": "pong"},
        {"match": {"input_regex": r"order #\d+"}, "text": "order found"},
        {"match": {"model": "o3"}, "text": "from o3"},
        {"match": {"metadata": {"suite": "billing"}}, "text": "billing"},
    ], "turns": [{"text": "fallback"}], "on_exhausted": "repeat_last"})
    assert ask(llmsim, "ping").output_text == "turn zero"
    assert ask(llmsim, "say ping please").output_text == "pong"  # case-insensitive substring
    assert ask(llmsim, "where is order #42?").output_text == "order found"
    assert ask(llmsim, "hi", model="o3").output_text == "from o3"
    assert ask(llmsim, "hi", metadata={"suite": "billing"}).output_text == "billing"
    assert ask(llmsim, "where is order #x?").output_text == "fallback"


def test_a_scripted_tool_loop(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"rules": [
        {"match": {"tool_output_contains": "sunny"}, "text": "It is sunny in Paris."},
        {"match": {"input_contains": "weather"}, "times": 1,
         "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    ]})
    first = ask(llmsim, "What's the weather?", tools=[WEATHER])
    [call] = first.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Paris"}
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 24C"}
    second = ask(llmsim, [output], previous_response_id=first.id, tools=[WEATHER])
    assert second.output_text == "It is sunny in Paris."
    assert llmsim.requests[1]["input"][0]["output"] == "sunny, 24C"
    assert [e["step"] for e in llmsim.transcript] == ["rules[1]", "rules[0]"]


# The README's scenario and pytest example, as written there.
README_SCENARIO = """\
name: weather-agent
rules:
  - match: {tool_output_contains: sunny}          # put the rule for the tool's answer first
    text: It is sunny in Paris.
  - match: {input_contains: weather}              # also: input_regex, model, tool_output_regex, turn, metadata
    tool_calls: [{name: get_weather, arguments: {city: Paris}}]   # function (or custom) tool calls
    times: 1                                      # fire at most once
turns:
  - text: Hello! How can I help?
    reasoning_summary: Greeting the user.         # shown when the model reasons
  - fault: {kind: rate_limit, retry_after: 1}     # any fault of the Chaos testing section
on_exhausted: simulate
"""


class MyAgent:
    """The smallest agent loop: ask, run the tools it calls, send their outputs back, until it answers."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client

    def run(self, question: str) -> str:
        response = self.client.responses.create(model="gpt-4o", input=question, tools=[WEATHER])
        while calls := [item for item in response.output if item.type == "function_call"]:
            outputs = [{"type": "function_call_output", "call_id": call.call_id, "output": "sunny, 21C"}
                       for call in calls]
            response = self.client.responses.create(model="gpt-4o", input=outputs, tools=[WEATHER],
                                                    previous_response_id=response.id)
        return response.output_text


def test_the_readme_pytest_example_as_written(llmsim: LLMSim, tmp_path: Path) -> None:
    """An injected 429 refuses the first request before generation: it takes no turn and does not use up the
    `times: 1` rule, so the SDK's retry gets the tool call and the agent its scripted answer."""
    scenario = tmp_path / "weather.yaml"
    scenario.write_text(README_SCENARIO)
    llmsim.load_scenario(scenario)                             # a path, YAML text or a dict
    llmsim.set_faults({"kind": "rate_limit", "first": 1})      # faults for this test only
    agent = MyAgent(client=llmsim.openai_client(max_retries=2))
    assert agent.run("What's the weather?") == "It is sunny in Paris."
    assert llmsim.requests[-1]["input"][0]["type"] == "function_call_output"  # what the server received
    transcript = llmsim.transcript
    assert [(e["step"], e.get("refused")) for e in transcript] == [
        (None, {"status": 429, "code": "rate_limit_exceeded"}), ("rules[1]", None), ("rules[0]", None)]
    assert [e["index"] for e in transcript] == [0, 0, 1]  # the refused request is recorded at the turn it left


def test_a_request_refused_by_a_rate_limit_or_a_fault_takes_no_turn(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"text": "first"}, {"text": "second"}],
                          "rules": [{"match": {"turn": 1}, "text": "turn one"}]})
    llmsim.set_faults({"kind": "server_error", "first": 1}, rate_limits={"rpm": 2})
    with pytest.raises(openai.InternalServerError):
        ask(llmsim)
    assert ask(llmsim).output_text == "first"
    with pytest.raises(openai.RateLimitError):  # the bucket held 2: the 500 took one
        ask(llmsim)
    assert llmsim.load_scenario({"turns": [{"text": "first"}, {"text": "second"}],
                                 "rules": [{"match": {"turn": 1}, "text": "turn one"}]})["requests"] == 0
    llmsim.set_faults()
    assert [ask(llmsim).output_text for _ in range(3)] == ["first", "turn one", "second"]
    state = httpx.get(f"{llmsim.server.url}/llmsim/admin/scenarios").json()
    assert state["requests"] == 3 and state["position"] == 2


def test_a_scripted_http_fault_after_admission_finishes_its_log_entry(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"fault": "server_error"}, {"text": "after"}]})
    with pytest.raises(openai.InternalServerError):
        ask(llmsim)
    assert ask(llmsim).output_text == "after"
    assert [entry["status"] for entry in llmsim.fault_log] == [500, 200]


def test_a_scripted_reasoning_summary(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"text": "4", "reasoning_summary": "Adding two and two."}]})
    response = ask(llmsim, "2+2?", model="o3", reasoning={"effort": "low", "summary": "auto"})
    reasoning = response.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "Adding two and two."
    assert response.output_text == "4"


def test_a_scripted_http_fault(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"fault": {"kind": "rate_limit", "retry_after": 2}}, {"text": "recovered"}]})
    with pytest.raises(openai.RateLimitError) as caught:
        ask(llmsim)
    assert caught.value.response.headers["retry-after"] == "2"
    assert ask(llmsim).output_text == "recovered"


def test_a_scripted_stream_fault(llmsim: LLMSim) -> None:
    llmsim.load_scenario({"turns": [{"text": "a long answer " * 20, "fault": {"kind": "stream_failed",
                                                                              "after_events": 5}}]})
    events = list(llmsim.client.responses.create(model="gpt-4o", input="hi", stream=True))
    assert events[-1].type == "response.failed" and events[-1].response.status == "failed"
    streamed = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert 0 < len(streamed) < len("a long answer " * 20)


def test_the_admin_api_rejects_a_bad_scenario_with_every_problem(llmsim: LLMSim) -> None:
    bad = {"turns": [{"txt": "typo"}], "rules": [{"match": {"input_regex": "("}, "text": "x"}],
           "on_exhausted": "explode"}
    response = httpx.put(f"{llmsim.server.url}/llmsim/admin/scenarios", json=bad)
    error = response.json()["error"]
    assert response.status_code == 400 and error["code"] == "invalid_scenario"
    for field in ("turns.0.txt", "rules.0.match.input_regex", "on_exhausted"):
        assert field in error["message"]


def test_yaml_through_the_admin_api(llmsim: LLMSim) -> None:
    state = llmsim.load_scenario("name: yaml\nturns:\n  - text: from yaml\n")
    assert state["scenario"]["name"] == "yaml" and ask(llmsim).output_text == "from yaml"


GOOD = """\
name: checkout
rules:
  - match: {input_contains: refund}
    text: Refund issued.
turns:
  - text: Welcome!
on_exhausted: repeat_last
"""


def test_cli_validate(tmp_path: Path) -> None:
    good, bad = tmp_path / "good.yaml", tmp_path / "bad.yaml"
    good.write_text(GOOD)
    bad.write_text("turns:\n  - fault: {kind: 999}\n")
    ok = subprocess.run([sys.executable, "-m", "llmsim", "scenario", "validate", str(good)], capture_output=True,
                        text=True)
    assert ok.returncode == 0 and "scenario 'checkout', 1 rules, 1 turns" in ok.stdout
    failed = subprocess.run([sys.executable, "-m", "llmsim", "scenario", "validate", str(bad)], capture_output=True,
                            text=True)
    assert failed.returncode == 2 and str(bad) in failed.stderr and "turns.0.fault.kind" in failed.stderr


def test_a_scenario_file_at_start_and_the_admin_key(tmp_path: Path,
                                                    start_server: Callable[..., ServerProcess]) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(GOOD)
    server = start_server("--scenario", str(path), "--admin-key", "secret")
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0)
    assert client.responses.create(model="gpt-4o", input="hi").output_text == "Welcome!"
    assert client.responses.create(model="gpt-4o", input="a refund please").output_text == "Refund issued."
    assert httpx.get(f"{server.url}/llmsim/admin/scenarios").status_code == 401
    state = httpx.get(f"{server.url}/llmsim/admin/scenarios", headers={"Authorization": "Bearer secret"}).json()
    assert state["scenario"]["name"] == "checkout" and state["requests"] == 2
