"""Claude Code (`@anthropic-ai/claude-code`, pinned in tests/clients/node's lockfile; `python tests/clients/newest.py`
runs the newest) against the plain simulator on its defaults (no `--model`: the model it picks itself), unscripted,
in a temporary git repository. A read-and-test task reads the file it names with `Read`, runs one read-only
command with `Bash`, and finishes with an answer from what they returned; the repository is as it was."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentkit import git, read_only, repo, trajectory
from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR

CLAUDE = NODE_DIR / "node_modules" / ".bin" / "claude"
QUIET = {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1",
         "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}


def test_a_read_and_test_task_only_reads_and_finishes(llmsim: LLMSim, tmp_path: Path) -> None:
    if not CLAUDE.exists():
        pytest.fail(f"{CLAUDE} missing: run `npm ci` in {NODE_DIR}")
    work = repo(tmp_path / "repo")
    home = tmp_path / "home"
    home.mkdir()
    env = {**os.environ, **QUIET, "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
           "ANTHROPIC_BASE_URL": llmsim.server.url, "ANTHROPIC_API_KEY": "sk-ant-llmsim", "PWD": str(work)}
    done = subprocess.run([str(CLAUDE), "-p", "Read calc.py, then run the tests with bash", "--output-format", "json"],
                          cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["subtype"] == "success" and not result["is_error"], result
    steps = trajectory(llmsim.requests)
    assert [step.name for step in steps] == ["Read", "Bash"], [str(s) for s in steps]
    assert all(read_only(step) for step in steps), [str(s) for s in steps]
    assert steps[0].arguments == {"file_path": str(work / "calc.py")}
    assert "return a + b" in result["result"] and "test_calc.py" in result["result"]  # an answer from the results
    assert not result["permission_denials"]
    assert git(work, "status", "--porcelain") == ""
