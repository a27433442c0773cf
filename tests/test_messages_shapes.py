"""The request shapes of the Messages API that change an answer, against a real server through the anthropic SDK:
`role: "system"` messages where they stand, `thinking.display`, toolsets with no name, compaction, `max_tokens: 0`,
top-level `cache_control`, signatures under a seed; and the forward-compatibility policy (an unknown field warned
by default, the live 400 under --strict-params or its header, the refused names always)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import pytest

from llmsim.testing import ServerProcess

MODEL = "claude-sonnet-4-6"
HELLO = [{"role": "user", "content": "Hello"}]
LONG = "The quick brown fox jumps over the lazy dog near the riverbank. " * 200  # past the 1,024-token minimum


def sdk(server: ServerProcess, **headers: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key="sk-ant-test", max_retries=0, default_headers=headers)


def test_a_system_message_mid_conversation_is_read_where_it_stands(server: ServerProcess) -> None:
    """Claude Code (on its default model) sends one between turns: its instruction holds from there on (a JSON
    answer), and one that says `clear_at: next_user_message` is gone once a user turn follows it."""
    client = sdk(server)
    turns: list[Any] = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
                        {"role": "system", "content": "From now on, respond only in JSON."},
                        {"role": "user", "content": "Name a colour"}]
    said = client.messages.create(model=MODEL, max_tokens=200, messages=turns)
    assert said.content[0].type == "text" and json.loads(said.content[0].text)
    counted = client.messages.count_tokens(model=MODEL, messages=turns).input_tokens
    turns[2] = {**turns[2], "clear_at": "next_user_message"}
    cleared = client.messages.create(model=MODEL, max_tokens=200, messages=turns)
    assert cleared.content[0].type == "text" and not cleared.content[0].text.lstrip().startswith("{")
    assert client.messages.count_tokens(model=MODEL, messages=turns).input_tokens < counted


@pytest.mark.parametrize("display", ["summarized", "omitted", "updates"])
def test_every_thinking_display_is_accepted(server: ServerProcess, display: str) -> None:
    made = sdk(server).beta.messages.create(model=MODEL, max_tokens=4096, messages=HELLO,  # type: ignore[call-overload]
                                            thinking={"type": "enabled", "budget_tokens": 2048, "display": display})
    thinking = made.content[0]
    assert thinking.type == "thinking" and thinking.signature
    assert (thinking.thinking == "") == (display == "omitted")


def test_a_computer_toolset_is_called_by_its_members_names(server: ServerProcess) -> None:
    made = sdk(server).beta.messages.create(
        model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "Take a screenshot of the screen"}],
        tools=[{"type": "computer_toolset_20260801", "configs": {"zoom": {"enabled": False}}}],
        tool_choice={"type": "any"})
    call = next(block for block in made.content if block.type == "tool_use")
    assert made.stop_reason == "tool_use" and call.toolset_name == "computer"
    assert call.name in {"screenshot", "left_click", "type", "key", "mouse_move", "scroll", "cursor_position",
                         "right_click", "middle_click", "double_click", "triple_click", "left_click_drag",
                         "left_mouse_down", "left_mouse_up", "hold_key", "wait"}  # zoom is disabled
    named = sdk(server).beta.messages.create(
        model=MODEL, max_tokens=1024, messages=[{"role": "user", "content": "Open the docs"}],
        tools=[{"type": "browser_toolset_20260801"}], tool_choice={"type": "tool", "name": "navigate"})
    navigate = next(block for block in named.content if block.type == "tool_use")
    assert navigate.name == "navigate" and navigate.toolset_name == "browser" and "url" in navigate.input


def test_a_compaction_request_answers_one_compaction_block(server: ServerProcess) -> None:
    turns: list[Any] = [{"role": "user", "content": "Plan the trip to Lisbon"},
                        {"role": "assistant", "content": "Sure."}, {"role": "user", "content": "Now summarise"}]
    made = sdk(server).beta.messages.create(model=MODEL, max_tokens=1024, messages=turns,
                                            compaction={"type": "summarize"})
    assert made.stop_reason == "compaction" and [block.type for block in made.content] == ["compaction"]
    summary = made.content[0].content
    assert summary and "Lisbon" in summary
    with sdk(server).beta.messages.stream(model=MODEL, max_tokens=1024, messages=turns,
                                          compaction={"type": "summarize"}) as stream:
        streamed = stream.get_final_message()
    assert streamed.stop_reason == "compaction" and streamed.content[0].content == summary
    later = sdk(server).beta.messages.create(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": [made.content[0].model_dump()]},  # type: ignore[list-item]
                                               {"role": "user", "content": "Go on"}])
    assert later.stop_reason == "end_turn"


def test_max_tokens_0_writes_the_cache_and_generates_nothing(server: ServerProcess) -> None:
    client = sdk(server)
    system: Any = [{"type": "text", "text": LONG + " warm-0", "cache_control": {"type": "ephemeral"}}]
    warmed = client.messages.create(model=MODEL, max_tokens=0, system=system, messages=HELLO)
    assert warmed.content == [] and warmed.stop_reason == "max_tokens" and warmed.usage.output_tokens == 0
    assert warmed.usage.cache_creation_input_tokens and warmed.usage.cache_creation_input_tokens > 1024
    read = client.messages.create(model=MODEL, max_tokens=100, system=system, messages=HELLO)
    assert read.usage.cache_read_input_tokens == warmed.usage.cache_creation_input_tokens


def test_top_level_cache_control_marks_the_last_cacheable_block(server: ServerProcess) -> None:
    client = sdk(server)
    turns: Any = [{"role": "user", "content": LONG + " top-level"}]
    first = client.messages.create(model=MODEL, max_tokens=50, messages=turns, cache_control={"type": "ephemeral"})
    second = client.messages.create(model=MODEL, max_tokens=50, messages=turns, cache_control={"type": "ephemeral"})
    assert first.usage.cache_creation_input_tokens and first.usage.cache_creation_input_tokens > 1024
    assert second.usage.cache_read_input_tokens == first.usage.cache_creation_input_tokens


def test_a_thinking_signature_repeats_under_a_seed(server: ServerProcess) -> None:
    def signed() -> str:
        made = sdk(server, **{"X-LLMSim-Seed": "7"}).messages.create(
            model=MODEL, max_tokens=4096, messages=HELLO, thinking={"type": "enabled", "budget_tokens": 2048})
        assert made.content[0].type == "thinking"
        return made.content[0].signature

    assert signed() == signed()


def test_unknown_fields_warn_by_default_and_fail_strict(shared_server: Any) -> None:
    body = {"model": MODEL, "max_tokens": 50, "messages": HELLO, "future_knob": 1,
            "tools": [{"name": "t", "input_schema": {"type": "object"}, "future_flag": True}]}
    server = shared_server()
    for path in ("/v1/messages", "/v1/messages/count_tokens"):
        lenient = httpx.post(f"{server.url}{path}", json=body)
        assert lenient.status_code == 200, lenient.text
        assert "future_knob" in lenient.headers["x-llmsim-warnings"]
        assert "tools[0].future_flag" in lenient.headers["x-llmsim-warnings"]
        strict = httpx.post(f"{server.url}{path}", json=body, headers={"X-LLMSim-Strict-Params": "true"})
        error = strict.json()["error"]
        assert strict.status_code == 400 and error["type"] == "invalid_request_error"
        assert error["message"] in ("future_knob: Extra inputs are not permitted",
                                    "tools.0.future_flag: Extra inputs are not permitted")
    flagged = shared_server("--strict-params")
    refused = httpx.post(f"{flagged.url}/v1/messages", json=body)
    assert refused.status_code == 400 and "Extra inputs are not permitted" in refused.text
    for name in ("max_completion_tokens", "response_format", "stop"):  # another API's: refused in every mode
        wrong = httpx.post(f"{server.url}/v1/messages", json={**body, name: 1})
        assert wrong.status_code == 400 and wrong.json()["error"]["message"].startswith(name), wrong.text


def test_an_unknown_block_type_is_named_in_the_error(server: ServerProcess) -> None:
    body = {"model": MODEL, "max_tokens": 50,
            "messages": [{"role": "user", "content": [{"type": "hologram", "data": "x"}]}]}
    answer = httpx.post(f"{server.url}/v1/messages", json=body)
    message = answer.json()["error"]["message"]
    assert answer.status_code == 400 and "'hologram'" in message and message.startswith("messages.0.content.0")
