"""Claude Code (`@anthropic-ai/claude-code`, pinned in tests/clients/node's lockfile; `python tests/clients/newest.py`
runs the newest) against the plain simulator on its defaults (no `--model`: the model it picks itself), unscripted,
in a temporary git repository. A read-and-test task reads the file it names with `Read`, runs one read-only
command with `Bash`, and finishes with an answer from what they returned; the repository is as it was. A
literal edit ("add the line X to FILE") reads the file, then makes the edit once with `Edit`."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentkit import CALC, git, read_only, repo, trajectory
from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR

CLAUDE = NODE_DIR / "node_modules" / ".bin" / "claude"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}


def claude(llmsim: LLMSim, work: Path, prompt: str, *flags: str) -> dict[str, Any]:
    """`claude -p PROMPT` in `work` on its defaults (no --model), its home beside it; the JSON result."""
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} missing: run `npm ci` in {NODE_DIR}")
    home = work.parent / "home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, **QUIET, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": llmsim.server.url, "ANTHROPIC_API_KEY": "sk-ant-llmsim", "PWD": str(work)}
    done = subprocess.run([str(CLAUDE), "-p", prompt, "--output-format", "json", *flags], cwd=work, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result: dict[str, Any] = json.loads(done.stdout)
    assert result["subtype"] == "success" and not result["is_error"], result
    return result


def test_a_read_and_test_task_only_reads_and_finishes(llmsim: LLMSim, tmp_path: Path) -> None:
    work = repo(tmp_path / "repo")
    result = claude(llmsim, work, "Read calc.py, then run the tests with bash")
    steps = trajectory(llmsim.requests)
    assert [step.name for step in steps] == ["Read", "Bash"], [str(s) for s in steps]
    assert all(read_only(step) for step in steps), [str(s) for s in steps]
    assert steps[0].arguments == {"file_path": str(work / "calc.py")}
    assert "return a + b" in result["result"] and "test_calc.py" in result["result"]  # an answer from the results
    assert not result["permission_denials"]
    assert git(work, "status", "--porcelain") == ""


def test_a_literal_edit_reads_then_edits_once(llmsim: LLMSim, tmp_path: Path) -> None:
    work = repo(tmp_path / "repo")
    claude(llmsim, work, "add the line # done to calc.py", "--permission-mode", "acceptEdits")
    assert [step.name for step in trajectory(llmsim.requests)] == ["Read", "Edit"]
    assert (work / "calc.py").read_text() == CALC + "# done\n"  # once, through its own Edit tool
    assert git(work, "status", "--porcelain") == " M calc.py\n"
