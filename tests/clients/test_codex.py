"""OpenAI's Codex CLI (`@openai/codex`, pinned in tests/clients/node) against a real LLMSim, unchanged: `codex exec`
run non-interactively with a model provider whose base_url is the server (`-c` overrides, a temporary
CODEX_HOME), on `gpt-5` and on Codex's own default model, whose tools come in an `additional_tools` input item
(its `exec` is a custom tool with a lark grammar). Scripted turns make it run a shell command and its `exec`
tool, each creating a real file in a temporary git repository."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from clientkit import RATE_LIMIT_ONCE, retried, texts
from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR
from optional import needs_node

pytestmark = needs_node()

CLIENT = "Codex CLI"
CODEX = NODE_DIR / "node_modules" / ".bin" / "codex"
DEFAULT_MODEL = "gpt-6.2-sol"  # Codex 0.171.0's default (`codex debug models`)

Codex = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def codex(llmsim: LLMSim, tmp_path: Path) -> Codex:
    """`codex(prompt, *args, model=None, websockets=False)`: one `codex exec` in a fresh git repository (the
    fixture's `repo`), every approval and sandbox off (the commands are the scenario's own)."""
    if not CODEX.exists():
        pytest.fail(f"{CODEX} missing: run `npm ci` in {NODE_DIR}")
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    provider = {"name": '"llmsim"', "base_url": f'"{llmsim.base_url}"', "wire_api": '"responses"',
                "env_key": '"LLMSIM_KEY"', "request_max_retries": "2", "stream_max_retries": "2"}

    def run(prompt: str, *args: str, model: str | None = None, websockets: bool = False
            ) -> subprocess.CompletedProcess[str]:
        overrides = [f"model_providers.llmsim.{key}={value}" for key, value in provider.items()]
        overrides += ['model_provider="llmsim"',
                      f"model_providers.llmsim.supports_websockets={str(websockets).lower()}"]
        command = [str(CODEX), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                   *(arg for override in overrides for arg in ("-c", override)), *(["-m", model] if model else []),
                   *args, prompt]
        env = {**os.environ, "CODEX_HOME": str(tmp_path / "home"), "LLMSIM_KEY": "sk-llmsim", "NO_COLOR": "1"}
        (tmp_path / "home").mkdir(exist_ok=True)
        done = subprocess.run(command, cwd=repo, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, \
            f"codex exec failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        return done

    run.repo = repo  # type: ignore[attr-defined]
    return run


def _turns(llmsim: LLMSim) -> list[dict]:
    """The request bodies that asked for output (WebSocket mode's warm-up, `generate: false`, left out)."""
    return [body for body in llmsim.requests if body.get("generate", True) is not False]


@pytest.mark.parametrize("model", ["gpt-5", DEFAULT_MODEL])
def test_text(llmsim: LLMSim, codex: Codex, model: str) -> None:
    llmsim.load_scenario({"turns": [{"text": "Hello from LLMSim."}]})
    done = codex("Say hello.", model=model)
    assert "Hello from LLMSim." in done.stdout
    body = _turns(llmsim)[-1]
    assert body["model"] == model and body["client_metadata"]["thread_id"]  # what used to be a 400
    if model == DEFAULT_MODEL:  # its tools come as an input item, not in `tools`
        assert any(item.get("type") == "additional_tools" for item in body["input"])
    assert llmsim.warnings == []


def test_streaming(llmsim: LLMSim, codex: Codex) -> None:
    done = codex("Tell me about rivers.", model="gpt-5", websockets=True)
    assert done.stdout.strip()
    assert all(body.get("stream") for body in llmsim.requests)  # WebSocket mode streams every response


def test_server_state(llmsim: LLMSim, codex: Codex) -> None:
    """WebSocket mode: the turn after a tool call chains from the connection's last response."""
    llmsim.load_scenario({"turns": [
        {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo ws > ws.txt"}}]}, {"text": "Done."}]})
    codex("Write ws.txt.", model="gpt-5", websockets=True)
    assert (codex.repo / "ws.txt").read_text() == "ws\n"  # type: ignore[attr-defined]
    turns = _turns(llmsim)
    assert turns[-1].get("previous_response_id") and any(
        item.get("type") == "function_call_output" for item in turns[-1]["input"])


def test_client_history(llmsim: LLMSim, codex: Codex) -> None:
    codex("My name is Ada.", model="gpt-5")
    codex("What is my name?", "resume", "--last", model="gpt-5")
    assert "My name is Ada" in texts(_turns(llmsim)[-1]["input"])


def test_tools(llmsim: LLMSim, codex: Codex) -> None:
    """gpt-5: Codex's shell tool (a function tool), scripted; the command runs and its output goes back."""
    llmsim.load_scenario({"turns": [
        {"tool_calls": [{"name": "exec_command", "arguments": {"cmd": "echo made > made.txt && echo sunny and 22 C"}}]},
        {"text": "Done."}]})
    done = codex("Create made.txt.", model="gpt-5")
    assert (codex.repo / "made.txt").read_text() == "made\n"  # type: ignore[attr-defined]
    assert "Done." in done.stdout and "sunny and 22 C" in texts(_turns(llmsim)[-1]["input"])


def test_tools__custom_exec(llmsim: LLMSim, codex: Codex) -> None:
    """Codex's default model: its `exec` custom tool (JavaScript; from the additional_tools item) is called with
    the scenario's input as it stands, a `custom_tool_call`, and runs a nested shell command."""
    script = 'await tools.exec_command({cmd: "echo js > made.txt"});'
    llmsim.load_scenario({"turns": [{"tool_calls": [{"name": "exec", "arguments": script}]}, {"text": "Done."}]})
    done = codex("Create made.txt.")
    assert (codex.repo / "made.txt").read_text() == "js\n"  # type: ignore[attr-defined]
    answered = _turns(llmsim)[-1]["input"]
    call = next(item for item in answered if item.get("type") == "custom_tool_call")
    assert (call["name"], call["input"]) == ("exec", script)
    assert any(item.get("type") == "custom_tool_call_output" for item in answered) and "Done." in done.stdout


def test_tools__apply_patch(llmsim: LLMSim, codex: Codex) -> None:
    """apply_patch, a custom lark tool (nested in `exec` on the default model): scripted like any other."""
    patch = "*** Begin Patch\n*** Add File: patched.txt\n+patched\n*** End Patch\n"
    script = f"await tools.apply_patch({json.dumps(patch)});"
    llmsim.load_scenario({"turns": [{"tool_calls": [{"name": "exec", "arguments": script}]}, {"text": "Done."}]})
    codex("Patch it.")
    assert (codex.repo / "patched.txt").read_text() == "patched\n"  # type: ignore[attr-defined]


def test_structured(llmsim: LLMSim, codex: Codex, tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "celsius": {"type": "integer"}},
              "required": ["city", "celsius"], "additionalProperties": False}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    done = codex("Weather in Paris as JSON.", "--output-schema", str(tmp_path / "schema.json"), model="gpt-5")
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(answer) == {"city", "celsius"} and isinstance(answer["celsius"], int)
    assert _turns(llmsim)[-1]["text"]["format"]["type"] == "json_schema"


def test_reasoning(llmsim: LLMSim, codex: Codex) -> None:
    codex("Think, then answer.", "-c", 'model_reasoning_effort="high"', model="gpt-5")
    body = _turns(llmsim)[-1]
    assert body["reasoning"]["effort"] == "high"
    assert llmsim.fault_log[-1]["status"] == 200


def test_retry(llmsim: LLMSim, codex: Codex) -> None:
    llmsim.set_faults(RATE_LIMIT_ONCE)
    done = codex("Say hello.", model="gpt-5")
    assert done.stdout.strip()
    retried(llmsim)
