"""Claude Code (`@anthropic-ai/claude-code`, pinned in tests/clients/node's lockfile) against LLMSim: `claude -p`
with ANTHROPIC_BASE_URL at the server, its own home and config, and no traffic anywhere else. A plain turn
completes on the simulator; a scenario scripts its `Write` and `Bash` tools, and the files appear for real."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR
from optional import needs_node

pytestmark = needs_node()

CLAUDE = NODE_DIR / "node_modules" / ".bin" / "claude"
MODEL = "claude-sonnet-4-6"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}


def claude(llmsim: LLMSim, workdir: Path, prompt: str, *flags: str) -> dict[str, Any]:
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **QUIET, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": llmsim.server.url, "ANTHROPIC_API_KEY": "sk-ant-llmsim"}
    done = subprocess.run([str(CLAUDE), "-p", prompt, "--model", MODEL, "--output-format", "json", *flags],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_plain_turn(llmsim: LLMSim, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = claude(llmsim, work, "Say hi")
    assert result["subtype"] == "success" and not result["is_error"] and result["result"].strip()
    assert result["num_turns"] == 1
    assert any(entry["endpoint"] == "messages" and entry["model"] == MODEL for entry in llmsim.fault_log)


def test_scenario_drives_write_and_bash(llmsim: LLMSim, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    llmsim.load_scenario({"name": "claude-code", "rules": [
        {"match": {"tool_output_contains": "BASH_OK"}, "text": "Wrote the file and ran the command."},
        {"match": {"tool_output_regex": "(?i)created|written|success"},
         "tool_calls": [{"name": "Bash", "arguments": {"command": f"echo ran > {work}/bash.txt && echo BASH_OK",
                                                       "description": "Leave a marker"}}]},
        {"match": {"input_contains": "LLMSIM-TASK", "model": MODEL},
         "tool_calls": [{"name": "Write", "arguments": {"file_path": str(work / "hello.txt"),
                                                        "content": "hello from a scenario\n"}}]},
    ]})
    result = claude(llmsim, work, "LLMSIM-TASK: write the file", "--allowedTools", "Write,Bash",
                    "--permission-mode", "acceptEdits")
    assert result["subtype"] == "success" and result["result"] == "Wrote the file and ran the command."
    assert (work / "hello.txt").read_text() == "hello from a scenario\n"
    assert (work / "bash.txt").read_text() == "ran\n"
    assert result["num_turns"] == 3 and not result["permission_denials"]
