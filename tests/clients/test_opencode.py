"""opencode (`opencode-ai`, pinned in tests/clients/node's lockfile) against the plain simulator, unscripted, in a
temporary git repository: `opencode run` with a provider whose baseURL is the server (Chat Completions through
`@ai-sdk/openai-compatible`, bundled with opencode), its config, data and cache in a temporary home, and nothing
fetched from anywhere else. A read-and-test task reads the file it names and runs one read-only command; the
turn finishes and the repository is as it was; a literal edit goes through its `edit` tool, once."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from agentkit import CALC, git, read_only, repo, trajectory
from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR

OPENCODE = NODE_DIR / "node_modules" / ".bin" / "opencode"
MODEL = "gpt-4o"


def opencode(llmsim: LLMSim, tmp_path: Path, work: Path, prompt: str) -> subprocess.CompletedProcess[str]:
    if not OPENCODE.exists():
        pytest.fail(f"{OPENCODE} missing: run `npm ci` in {NODE_DIR}")
    home = tmp_path / "home"
    config = tmp_path / "opencode.json"
    config.write_text(json.dumps({
        "$schema": "https://opencode.ai/config.json", "model": f"llmsim/{MODEL}", "autoupdate": False,
        "provider": {"llmsim": {"npm": "@ai-sdk/openai-compatible", "name": "LLMSim",
                                "options": {"baseURL": llmsim.base_url, "apiKey": "sk-llmsim"},
                                "models": {MODEL: {"name": MODEL, "limit": {"context": 128000, "output": 16384}}}}}}))
    env = {**os.environ, "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
           "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_CACHE_HOME": str(home / ".cache"),
           "XDG_STATE_HOME": str(home / ".local" / "state"), "OPENCODE_CONFIG": str(config),
           "OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1", "NO_COLOR": "1",
           "PWD": str(work)}  # opencode takes its working directory from PWD
    done = subprocess.run([str(OPENCODE), "run", prompt], cwd=work, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done


def test_a_read_and_test_task_only_reads_and_finishes(llmsim: LLMSim, tmp_path: Path) -> None:
    work = repo(tmp_path / "repo")
    done = opencode(llmsim, tmp_path, work, "Read calc.py, then run the tests with bash")
    steps = trajectory(llmsim.requests)
    assert [step.name for step in steps] == ["read", "bash"], [str(s) for s in steps]
    assert all(read_only(step) for step in steps), [str(s) for s in steps]
    assert steps[0].arguments == {"filePath": str(work / "calc.py")}  # the file the request names, no invented offset
    assert "return a + b" in done.stdout + done.stderr and "Here is what I found" in done.stdout + done.stderr
    assert git(work, "status", "--porcelain") == ""  # nothing written, nothing left behind


def test_a_literal_edit_reads_then_edits_once(llmsim: LLMSim, tmp_path: Path) -> None:
    work = repo(tmp_path / "repo")
    opencode(llmsim, tmp_path, work, "add the line # done to calc.py")
    assert [step.name for step in trajectory(llmsim.requests)] == ["read", "edit"]
    assert (work / "calc.py").read_text() == CALC + "# done\n"
    assert git(work, "status", "--porcelain") == " M calc.py\n"  # nothing else written
