"""Tool use like a careful model (issue 33) and arguments that follow their schema exactly (issue 32,
finding 5), against a real server: a shell tool gets a read-only command that fits the request, a call is
never repeated, calls per conversation are bounded, a final-answer tool ends a required loop, whole numbers
for count-like numbers, an only-optional property is filled, and answers after tool results read cleanly."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

import jsonschema
import openai
import pytest

from llmsim.backends.sim import shell, tools
from llmsim.testing import ServerProcess

READ_ONLY = {"ls", "ls -la", "pwd", "git status", "git log --oneline -5", "git ls-files", "cat README.md"}
CODEX_SHELL = {  # the shape of Codex CLI's `shell` function tool
    "type": "function", "name": "shell", "description": "Runs a shell command and returns its output.",
    "parameters": {"type": "object", "properties": {
        "command": {"type": "array", "items": {"type": "string"}, "description": "The command to execute"},
        "workdir": {"type": "string", "description": "The working directory to execute the command in"},
        "timeout_ms": {"type": "number", "description": "The timeout for the command in milliseconds"},
    }, "required": ["command"], "additionalProperties": False},
}
EXEC_COMMAND = {"type": "function", "name": "exec_command", "description": "Run a command in a terminal.",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}
WEATHER = {"type": "function", "name": "get_weather", "description": "Get the current weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
FINAL = {"type": "function", "name": "final_answer", "description": "Provides a final answer to the given problem.",
         "parameters": {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}


@pytest.fixture(scope="module")
def client(shared_server: Callable[..., ServerProcess]) -> openai.OpenAI:
    return openai.OpenAI(base_url=shared_server().base_url, api_key="sk-test", max_retries=0)


def function_calls(response: object) -> list:
    return [item for item in response.output if item.type == "function_call"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("request_text", "command"), [
    ("List the files in this project", "ls -la"), ("What changed in the repo? Check git.", "git status"),
    ("Which directory am I in? Print the working directory", "pwd"), ("Summarise this project", "cat README.md"),
    ("Delete every file here with rm -rf and then run it", "ls -la"), ("Run the tests", "git ls-files")])
def test_a_shell_tool_gets_a_read_only_command_that_fits(client: openai.OpenAI, request_text: str,
                                                         command: str) -> None:
    for tool in (CODEX_SHELL, EXEC_COMMAND):
        [call] = function_calls(client.responses.create(model="gpt-5", input=request_text, tools=[tool],
                                                        tool_choice="required"))
        arguments = json.loads(call.arguments)
        sent = arguments["command"][-1] if tool is CODEX_SHELL else arguments["cmd"]
        assert sent == command and sent in READ_ONLY
        assert set(arguments) == ({"command"} if tool is CODEX_SHELL else {"cmd"})  # no invented workdir
        if tool is CODEX_SHELL:
            assert arguments["command"][:2] == ["bash", "-lc"]


def test_among_many_tools_a_request_about_the_workspace_goes_to_the_shell_alone(client: openai.OpenAI) -> None:
    image = {"type": "function", "name": "view_image", "description": "View a local image file from the filesystem.",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}}
    [call] = function_calls(client.responses.create(  # under auto, as Codex CLI asks
        model="gpt-5", input="List the files in this project and summarise it", tools=[image, WEATHER, EXEC_COMMAND]))
    assert call.name == "exec_command" and json.loads(call.arguments) == {"cmd": "ls -la"}


def test_the_command_table_only_reads() -> None:
    assert {command for _, command in shell.COMMANDS} | {shell.DEFAULT_COMMAND} <= READ_ONLY
    assert shell.is_shell(CODEX_SHELL) and shell.is_shell(EXEC_COMMAND) and not shell.is_shell(WEATHER)


def test_an_identical_call_is_never_repeated(client: openai.OpenAI) -> None:
    history: list = [{"role": "user", "content": "What's the weather in Paris?"}]
    first = client.responses.create(model="gpt-4o", input=history, tools=[WEATHER], tool_choice="required")
    [call] = function_calls(first)
    history += [{"type": "function_call", "call_id": call.call_id, "name": call.name, "arguments": call.arguments},
                {"type": "function_call_output", "call_id": call.call_id, "output": "rain"}]
    again = client.responses.create(model="gpt-4o", input=history, tools=[WEATHER], tool_choice="required")
    assert all((c.name, c.arguments) != (call.name, call.arguments) for c in function_calls(again))


def test_calls_per_conversation_are_bounded(client: openai.OpenAI) -> None:
    history: list = [{"role": "user", "content": "Get the weather in many cities"}]
    for i in range(tools.MAX_CALLS):
        history += [{"type": "function_call", "call_id": f"c{i}", "name": "get_weather",
                     "arguments": json.dumps({"city": f"City {i}"})},
                    {"type": "function_call_output", "call_id": f"c{i}", "output": f"{i} C"}]
    history.append({"role": "user", "content": "And the weather in Rome?"})
    response = client.responses.create(model="gpt-4o", input=history, tools=[WEATHER])
    assert not function_calls(response) and response.output_text


def test_a_final_answer_tool_ends_a_required_loop_with_the_results(client: openai.OpenAI) -> None:
    history: list = [{"role": "user", "content": "What's the weather in Paris?"},
                     {"type": "function_call", "call_id": "c1", "name": "get_weather",
                      "arguments": '{"city": "Paris"}'},
                     {"type": "function_call_output", "call_id": "c1", "output": "sunny 21C"}]
    response = client.responses.create(model="gpt-4o", input=history, tools=[WEATHER, FINAL],
                                       tool_choice="required")
    [call] = function_calls(response)
    assert call.name == "final_answer" and "sunny 21C" in json.loads(call.arguments)["answer"]


def test_the_answer_after_tool_results_has_no_word_salad(client: openai.OpenAI) -> None:
    history = [{"role": "user", "content": "What's the weather in Paris?"},
               {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": '{"city": "Paris"}'},
               {"type": "function_call_output", "call_id": "c1", "output": "sunny 21C"}]
    for seed in range(6):
        text = client.responses.create(model="gpt-4o", input=history, tools=[WEATHER],
                                       extra_headers={"X-LLMSim-Seed": str(seed)}).output_text
        assert text.startswith("Here is what I found: get_weather returned sunny 21C. ")
        closing = text.split("sunny 21C. ", 1)[1]
        assert re.fullmatch(r"(That should answer your question about|Those are the current details on|Let me know "
                            r"if you want more detail on) weather and Paris\.", closing), closing


COUNTS = {"type": "object", "properties": {
    "timeout_ms": {"type": "number"}, "max_output_tokens": {"type": "number", "minimum": 1, "maximum": 4096},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2}}, "required": ["timeout_ms", "max_output_tokens",
                                                                                "temperature"]}


def test_count_like_numbers_are_whole_and_every_number_in_bounds(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "configure", "description": "Configure the run", "parameters": COUNTS}
    for seed in range(8):
        [call] = function_calls(client.responses.create(model="gpt-4o", input="configure", tools=[tool],
                                                        tool_choice="required",
                                                        extra_headers={"X-LLMSim-Seed": str(seed)}))
        arguments = json.loads(call.arguments)
        jsonschema.validate(arguments, COUNTS)
        assert isinstance(arguments["timeout_ms"], int) and isinstance(arguments["max_output_tokens"], int)


def test_an_only_optional_property_is_always_filled(client: openai.OpenAI) -> None:
    tool = {"type": "function", "name": "record", "description": "Record the items",
            "parameters": {"type": "object", "properties": {"tasks": {"type": "array", "items": {
                "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}}}
    for seed in range(8):
        [call] = function_calls(client.responses.create(model="gpt-4o", input="record them", tools=[tool],
                                                        tool_choice="required",
                                                        extra_headers={"X-LLMSim-Seed": str(seed)}))
        assert json.loads(call.arguments)["tasks"]  # present and not empty


def test_enums_and_formats_hold(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"unit": {"enum": ["c", "f"]},
                                               "day": {"type": "string", "format": "date"},
                                               "mail": {"type": "string", "format": "email"}},
              "required": ["unit", "day", "mail"]}
    tool = {"type": "function", "name": "plan", "description": "Plan", "parameters": schema}
    for seed in range(4):
        [call] = function_calls(client.responses.create(model="gpt-4o", input="plan", tools=[tool],
                                                        tool_choice="required",
                                                        extra_headers={"X-LLMSim-Seed": str(seed)}))
        arguments = json.loads(call.arguments)
        assert arguments["unit"] in ("c", "f") and re.fullmatch(r"\d{4}-\d\d-\d\d", arguments["day"])
        assert re.fullmatch(r"[^@\s]+@[^@\s]+\.\w+", arguments["mail"])
