"""Codex CLI against the plain simulator, with no scenario, in a temporary git repository: a read-and-test turn
completes, every call only reads (the file the request names through `cat`, then `git ls-files`), and on Codex's
default model, whose `exec` tool runs JavaScript, the program the simulator writes runs without error. On gpt-5 a
call to a tool inside a `namespace` comes back with it, so Codex routes it. A literal edit on the default model
goes through the `apply_patch` its `exec` exposes. Needs the pinned `@openai/codex` of
tests/clients/node (npm ci there)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentkit import CALC, git, read_only, repo, trajectory
from clientkit import texts
from llmsim.pytest_plugin import LLMSim
from optional import needs_node

pytestmark = needs_node()

CODEX = Path(__file__).parent / "node" / "node_modules" / ".bin" / "codex"
DEFAULT_MODEL = "gpt-6.2-sol"  # Codex 0.171.0's default (`codex debug models`)


def codex(llmsim: LLMSim, tmp_path: Path, prompt: str, model: str | None, sandbox: str = "read-only"
          ) -> tuple[Path, str]:
    if not CODEX.exists():
        pytest.fail(f"{CODEX} missing: run `npm ci` in {CODEX.parents[2]}")
    work = repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    provider = (f'model_providers.llmsim={{ name = "llmsim", base_url = "{llmsim.base_url}", '
                'wire_api = "responses", env_key = "LLMSIM_API_KEY", supports_websockets = false }')
    result = subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--sandbox", sandbox, *(["-m", model] if model else []),
         "-c", 'model_provider="llmsim"', "-c", provider, prompt],
        cwd=work, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        env={**os.environ, "LLMSIM_API_KEY": "sk-test", "CODEX_HOME": str(home), "NO_COLOR": "1"})
    assert result.returncode == 0, result.stderr[-2000:]
    return work, result.stdout


def outputs(requests: list[dict[str, Any]]) -> list[str]:
    """The texts of the tool outputs Codex sent back, in the last request."""
    items = requests[-1].get("input") or []
    return [texts(item) for item in items if isinstance(item, dict)
            and item.get("type") in ("function_call_output", "custom_tool_call_output")]


@pytest.mark.parametrize("model", ["gpt-5", None], ids=["gpt-5", "default"])
def test_a_read_and_test_turn_completes_and_only_reads(llmsim: LLMSim, tmp_path: Path, model: str | None) -> None:
    work, answer = codex(llmsim, tmp_path, "Read calc.py, then run the tests", model)
    steps = trajectory(llmsim.requests)
    assert [step.command() for step in steps] == ["cat calc.py", "git ls-files"], [str(s) for s in steps]
    assert all(read_only(step) for step in steps), [str(s) for s in steps]
    if model is None:  # the default model's tools come in `additional_tools`; `exec` runs JavaScript
        assert llmsim.requests[-1]["model"] == DEFAULT_MODEL
        assert [step.name for step in steps] == ["exec", "exec"]
        assert all("Script completed" in out and "Script error" not in out for out in outputs(llmsim.requests))
    assert "return a + b" in answer and "test_calc.py" in answer and '"call_id"' not in answer  # prose, no raw JSON
    assert git(work, "status", "--porcelain") == ""  # nothing written


def test_a_namespaced_call_carries_its_namespace(llmsim: LLMSim, tmp_path: Path) -> None:
    """gpt-5's sub-agent tools come in the `multi_agent_v1` namespace: a call without it was `unsupported call`."""
    llmsim.load_scenario({"rules": [{"match": {"input_contains": "LLMSIM-CLOSE"}, "times": 1,
                                     "tool_calls": [{"name": "close_agent", "arguments": {"target": "nobody"}}]}]})
    codex(llmsim, tmp_path, "LLMSIM-CLOSE: close the agent named nobody", "gpt-5")
    [call] = [item for item in llmsim.requests[-1]["input"] if item.get("type") == "function_call"]
    assert call["name"] == "close_agent" and call["namespace"] == "multi_agent_v1"
    [out] = outputs(llmsim.requests)
    assert "unsupported call" not in out, out


def test_a_literal_edit_on_the_default_model_goes_through_its_nested_apply_patch(llmsim: LLMSim,
                                                                                 tmp_path: Path) -> None:
    work, answer = codex(llmsim, tmp_path, "add the line # done to calc.py", None, sandbox="workspace-write")
    steps = trajectory(llmsim.requests)
    assert [step.command() for step in steps][0] == "cat calc.py" and len(steps) == 2
    assert "tools.apply_patch(" in str(steps[1].arguments)  # its own edit tool, as its exec exposes it
    assert all("Script completed" in out for out in outputs(llmsim.requests))
    assert (work / "calc.py").read_text() == CALC + "# done\n" and "I edited calc.py" in answer
    assert git(work, "status", "--porcelain") == " M calc.py\n"
