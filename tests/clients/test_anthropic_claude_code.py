"""Claude Code (`@anthropic-ai/claude-code`, pinned in tests/clients/node's lockfile; tests/clients/newest.py runs
the newest) against LLMSim: `claude -p` with ANTHROPIC_BASE_URL at the server, its own home and config, and no
traffic anywhere else. A plain turn completes on the simulator; a scenario scripts its `Write` and `Bash` tools,
and the files appear for real. Each runs with `--model` and on Claude Code's defaults (no `--model`: it then sends
`role: "system"` messages mid-conversation), and no request it makes gets a 4xx."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR
from optional import needs_node

pytestmark = needs_node()

CLAUDE = NODE_DIR / "node_modules" / ".bin" / "claude"
MODEL = "claude-sonnet-4-6"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}


def refused(llmsim: LLMSim) -> int:
    """The Messages API's 4xx answers so far (the metrics count every answer, a 400 before admission too)."""
    scraped = httpx.get(f"{llmsim.server.url}/metrics").text
    return sum(int(float(line.rsplit(" ", 1)[1])) for line in scraped.splitlines()
               if line.startswith("llmsim_requests_total{") and '"/messages' in line and 'status="4' in line)


def claude(llmsim: LLMSim, workdir: Path, prompt: str, *flags: str, model: str | None = MODEL) -> dict[str, Any]:
    home = workdir.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **QUIET, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": llmsim.server.url, "ANTHROPIC_API_KEY": "sk-ant-llmsim"}
    env.pop("ANTHROPIC_MODEL", None)
    chosen = ["--model", model] if model else []
    before = refused(llmsim)
    done = subprocess.run([str(CLAUDE), "-p", prompt, *chosen, "--output-format", "json", *flags],
                          cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert refused(llmsim) == before  # no request was refused (a false 400 costs a retry, or the run)
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.mark.parametrize("model", [MODEL, None], ids=["model", "defaults"])
def test_plain_turn(llmsim: LLMSim, tmp_path: Path, model: str | None) -> None:
    work = tmp_path / "work"
    work.mkdir()
    result = claude(llmsim, work, "Say hi", model=model)
    assert result["subtype"] == "success" and not result["is_error"] and result["result"].strip()
    assert result["num_turns"] == 1
    assert any(entry["endpoint"] == "messages" and entry["model"] == (model or entry["model"])
               for entry in llmsim.fault_log)


@pytest.mark.parametrize("model", [MODEL, None], ids=["model", "defaults"])
def test_scenario_drives_write_and_bash(llmsim: LLMSim, tmp_path: Path, model: str | None) -> None:
    work = tmp_path / "work"
    work.mkdir()
    llmsim.load_scenario({"name": "claude-code", "rules": [
        {"match": {"tool_output_contains": "BASH_OK"}, "text": "Wrote the file and ran the command."},
        {"match": {"tool_output_regex": "(?i)created|written|success"},
         "tool_calls": [{"name": "Bash", "arguments": {"command": f"echo ran > {work}/bash.txt && echo BASH_OK",
                                                       "description": "Leave a marker"}}]},
        {"match": {"input_contains": "LLMSIM-TASK"},
         "tool_calls": [{"name": "Write", "arguments": {"file_path": str(work / "hello.txt"),
                                                        "content": "hello from a scenario\n"}}]},
    ]})
    result = claude(llmsim, work, "LLMSIM-TASK: write the file", "--allowedTools", "Write,Bash",
                    "--permission-mode", "acceptEdits", model=model)
    assert result["subtype"] == "success" and result["result"] == "Wrote the file and ran the command."
    assert (work / "hello.txt").read_text() == "hello from a scenario\n"
    assert (work / "bash.txt").read_text() == "ran\n"
    assert result["num_turns"] == 3 and not result["permission_denials"]
