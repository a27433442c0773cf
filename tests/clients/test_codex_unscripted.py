"""Codex CLI against the plain simulator, with no scenario: a turn completes, and every command the
simulator asked Codex to run only reads (`ls`, `pwd`, `git status`, `cat README.md`). Needs the pinned
`@openai/codex` of tests/clients/node (npm ci there)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from llmsim.backends.sim.shell import COMMANDS, DEFAULT_COMMAND
from llmsim.pytest_plugin import LLMSim
from optional import needs_node

pytestmark = needs_node()

CODEX = Path(__file__).parent / "node" / "node_modules" / ".bin" / "codex"
READ_ONLY = {command for _, command in COMMANDS} | {DEFAULT_COMMAND}


def commands_sent(requests: list[dict[str, Any]]) -> list[str]:
    """The commands of the shell calls Codex sent back as history (what it ran)."""
    found = []
    for body in requests:
        for item in body.get("input") or []:
            if not isinstance(item, dict) or item.get("type") not in ("function_call", "custom_tool_call",
                                                                       "local_shell_call"):
                continue
            raw = item.get("arguments") or item.get("input") or json.dumps(item.get("action") or {})
            try:
                value = json.loads(raw)
            except ValueError:
                value = raw
            command = value.get("command") or value.get("cmd") if isinstance(value, dict) else value
            found.append(command[-1] if isinstance(command, list) else str(command))
    return found


@pytest.mark.parametrize("model", ["gpt-5", "gpt-6.2-sol"])
def test_an_unscripted_turn_completes_and_only_reads(llmsim: LLMSim, tmp_path: Path, model: str) -> None:
    if not CODEX.exists():
        pytest.fail(f"{CODEX} missing: run `npm ci` in {CODEX.parents[2]}")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / ".codex").mkdir()
    (tmp_path / "README.md").write_text("# demo\n")
    provider = (f'model_providers.llmsim={{ name = "llmsim", base_url = "{llmsim.base_url}", '
                'wire_api = "responses", env_key = "LLMSIM_API_KEY" }')
    result = subprocess.run(
        [str(CODEX), "exec", "--skip-git-repo-check", "--sandbox", "read-only", "-m", model,
         "-c", 'model_provider="llmsim"', "-c", provider, "List the files in this project and summarise it"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "LLMSIM_API_KEY": "sk-test", "CODEX_HOME": str(tmp_path / ".codex")})
    assert result.returncode == 0, result.stderr[-2000:]
    ran = commands_sent(llmsim.requests)
    assert ran and all(command in READ_ONLY for command in ran), ran  # it looked, and only read
    assert sorted(p.name for p in tmp_path.iterdir()) == [".codex", ".git", "README.md"]  # nothing written
