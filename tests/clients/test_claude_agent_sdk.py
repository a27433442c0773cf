"""The Claude Agent SDK (`claude-agent-sdk`, PyPI; it drives its bundled Claude Code) against LLMSim on its
defaults (no model chosen): `query()` for a plain turn, and with a tool of its own (an in-process MCP server) that
a scenario makes the model call. Its thinking setting sends `thinking.display` values the Messages API declares
(`summarized`, `omitted`, `updates`); none of its requests gets a 4xx."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from llmsim.pytest_plugin import LLMSim
from optional import needs
from test_anthropic_claude_code import QUIET, refused

pytestmark = needs("claude_agent_sdk")


@pytest.fixture(scope="module")
def claude_agent_sdk() -> Any:
    """Imported by the process that runs these tests, not by every one that collects them (it brings MCP: ~0.8 s)."""
    import claude_agent_sdk

    return claude_agent_sdk


def options(llmsim: LLMSim, tmp_path: Path, **more: Any) -> Any:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {**QUIET, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": llmsim.server.url, "ANTHROPIC_API_KEY": "sk-ant-llmsim",
           "PATH": os.environ.get("PATH", "")}
    import claude_agent_sdk

    return claude_agent_sdk.ClaudeAgentOptions(cwd=str(tmp_path), env=env, max_turns=4, **more)


def run(prompt: str, chosen: Any) -> list[Any]:
    import claude_agent_sdk

    async def collect() -> list[Any]:
        return [message async for message in claude_agent_sdk.query(prompt=prompt, options=chosen)]

    return asyncio.run(collect())


def test_query_plain(llmsim: LLMSim, tmp_path: Path, claude_agent_sdk: Any) -> None:
    before = refused(llmsim)
    messages = run("Say hi", options(llmsim, tmp_path))
    result = messages[-1]
    assert isinstance(result, claude_agent_sdk.ResultMessage) and not result.is_error, messages[-3:]
    assert result.result and result.result.strip()
    assert refused(llmsim) == before
    assert llmsim.requests and all(body.get("model") for body in llmsim.requests)


@pytest.mark.parametrize("display", ["summarized", "omitted"])
def test_query_with_thinking_display(llmsim: LLMSim, tmp_path: Path, display: str, claude_agent_sdk: Any) -> None:
    before = refused(llmsim)
    thinking = {"type": "enabled", "budget_tokens": 2048, "display": display}
    messages = run("Say hi", options(llmsim, tmp_path, thinking=thinking))
    assert isinstance(messages[-1], claude_agent_sdk.ResultMessage) and not messages[-1].is_error
    assert refused(llmsim) == before
    sent = {body["thinking"].get("display") for body in llmsim.requests if body.get("thinking")}
    assert sent and sent <= {display, "updates"}, sent  # it asks for "omitted" as "updates"


def test_query_with_a_tool(llmsim: LLMSim, tmp_path: Path, claude_agent_sdk: Any) -> None:
    calls: list[dict[str, Any]] = []

    @claude_agent_sdk.tool("add", "Add two numbers", {"a": int, "b": int})
    async def add(args: dict[str, Any]) -> dict[str, Any]:
        calls.append(args)
        return {"content": [{"type": "text", "text": f"SUM={args['a'] + args['b']}"}]}

    server = claude_agent_sdk.create_sdk_mcp_server(name="calc", version="1.0.0", tools=[add])
    llmsim.load_scenario({"name": "agent-sdk", "rules": [
        {"match": {"tool_output_contains": "SUM=5"}, "text": "The sum is 5."},
        {"match": {"input_contains": "LLMSIM-ADD"},
         "tool_calls": [{"name": "mcp__calc__add", "arguments": {"a": 2, "b": 3}}]},
    ]})
    before = refused(llmsim)
    messages = run("LLMSIM-ADD: add 2 and 3", options(llmsim, tmp_path, mcp_servers={"calc": server},
                                                        allowed_tools=["mcp__calc__add"]))
    result = messages[-1]
    assert isinstance(result, claude_agent_sdk.ResultMessage) and not result.is_error, messages[-3:]
    assert calls == [{"a": 2, "b": 3}] and result.result == "The sum is 5."
    assert refused(llmsim) == before
