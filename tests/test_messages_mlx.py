"""The Messages API on the mlx backend (a scripted model built here, no download): Claude-style tool use goes
through the model's chat template, and the model's tool-call markup comes back as `tool_use` blocks, its
thinking as a thinking block; the tool result goes back through the template for the next turn."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from llmsim.testing import ServerProcess
from optional import needs

# Looked up, not imported: every xdist process collects this module, and importing mlx_lm costs a core ~3 s.
pytestmark = [needs("mlx_lm", install='pip install -e ".[mlx]"'), needs("anthropic")]

SCRIPTS = {
    "<|s_tool|>": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    "<|s_think|>": "<think>\nFirst, add two and two. That makes four.\n</think>\n\nThe answer is 4.",
    "<|s_endless|>": "again " * 300,
}
WEATHER = {"name": "get_weather", "description": "Weather in a city",
           "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    from llmsim.backends.mlx.fixture import build_scripted_model

    path = build_scripted_model(tmp_path_factory.mktemp("mlx-messages") / "scripted", SCRIPTS)
    with ServerProcess("--speed", "0", "--backend", "mlx", "--trust-remote-code", "--model", f"scripted={path}",
                       startup_timeout=120) as process:
        yield process


def test_tool_use_through_the_chat_template(server: ServerProcess) -> None:
    import anthropic

    client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
    ask = [{"role": "user", "content": "Weather? <|s_tool|>"}]
    with client.messages.stream(model="scripted", max_tokens=200, tools=[WEATHER], messages=ask) as stream:
        kinds = [event.type for event in stream]
        first = stream.get_final_message()
    [call] = first.content
    assert (call.type, call.name, call.input) == ("tool_use", "get_weather", {"city": "Paris"})
    assert first.stop_reason == "tool_use" and "input_json" in kinds and "text" not in kinds
    second = client.messages.create(model="scripted", max_tokens=50, tools=[WEATHER], messages=[
        *ask, {"role": "assistant", "content": first.content},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call.id, "content": '{"temp_c": 21}'}]}])
    # the tool result went through the template (the scripted model's next words depend on its KV cache's state,
    # so only the prompt's growth is asserted)
    assert second.content and second.usage.input_tokens > first.usage.input_tokens


def test_thinking_block_from_the_model(server: ServerProcess) -> None:
    import anthropic

    client = anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)
    message = client.messages.create(model="scripted", max_tokens=2000, thinking={"type": "adaptive"},
                                     messages=[{"role": "user", "content": "What is 2+2? <|s_think|>"}])
    thinking, text = message.content
    assert thinking.type == "thinking" and thinking.thinking == "First, add two and two. That makes four."
    assert thinking.signature and text.text == "The answer is 4."


def test_tokens_leave_as_they_are_decoded(server: ServerProcess) -> None:
    """Nothing paces the stream, but the model takes time: its first token leaves before its last is decoded."""
    body = {"model": "scripted", "max_tokens": 200, "stream": True,
            "messages": [{"role": "user", "content": "Go <|s_endless|>"}]}
    with httpx.stream("POST", server.url + "/v1/messages", json=body, headers={"x-api-key": "k"}) as response:
        reads = list(response.iter_raw())
    assert b"".join(reads).count(b"event: content_block_delta") >= 190
    first = next(i for i, read in enumerate(reads) if b"event: content_block_delta" in read)
    assert b"event: message_stop" not in reads[first] and len(reads) > 10
