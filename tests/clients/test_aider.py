"""aider (`aider-chat`, pinned in tests/clients/aider-requirements.txt: its exact pins clash with the `clients`
extra, so .ci/run installs it into its own virtual environment, `.venv-aider`) against the plain simulator, in a
temporary git repository, through Chat Completions. Unscripted, a request that spells out an edit gets a block in
aider's edit format (SEARCH/REPLACE, whole file, udiff) that applies, and aider commits it; any other request gets
prose that aider takes as no edit, and nothing changes; a scenario's edit block is applied as written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from agentkit import CALC, git, repo
from llmsim.pytest_plugin import LLMSim

ROOT = Path(__file__).resolve().parents[2]
AIDER = Path(os.environ.get("LLMSIM_AIDER") or ROOT / ".venv-aider" / "bin" / "aider")


@pytest.fixture
def aider(llmsim: LLMSim, tmp_path: Path):  # type: ignore[no-untyped-def]
    """`aider(message, *flags)`: one `aider --message` on calc.py in a fresh repository (the fixture's `repo`)."""
    if not AIDER.exists():
        if os.environ.get("LLMSIM_REQUIRE_AIDER"):
            pytest.fail(f"{AIDER} missing: .ci/run installs it from tests/clients/aider-requirements.txt")
        pytest.skip(f"aider is not installed here ({AIDER}); .ci/run installs it from "
                    "tests/clients/aider-requirements.txt")
    work = repo(tmp_path / "repo")
    home = tmp_path / "home"
    # aider downloads litellm's model list (GitHub, ~1 MB, up to 5 s) into a fresh home's cache on every run; a cache
    # that is not empty stops it, and litellm's bundled list (LITELLM_LOCAL_MODEL_COST_MAP) answers for the model.
    cache = home / ".aider" / "caches"
    cache.mkdir(parents=True)
    (cache / "model_prices_and_context_window.json").write_text('{"gpt-4o": {"litellm_provider": "openai"}}')

    def run(message: str, *flags: str) -> str:
        env = {**os.environ, "HOME": str(home), "OPENAI_API_BASE": llmsim.base_url, "OPENAI_API_KEY": "sk-llmsim",
               "LITELLM_LOCAL_MODEL_COST_MAP": "True", "GIT_AUTHOR_NAME": "test", "GIT_COMMITTER_NAME": "test",
               "GIT_AUTHOR_EMAIL": "test@example.com", "GIT_COMMITTER_EMAIL": "test@example.com"}
        done = subprocess.run(
            [str(AIDER), "--model", "openai/gpt-4o", "--yes-always", "--no-check-update", "--no-show-model-warnings",
             "--no-analytics", "--no-gitignore", "--no-pretty", "--no-stream", "--map-tokens", "0",
             "--chat-history-file", str(home / "chat.md"), "--input-history-file", str(home / "input"),
             *flags, "calc.py", "--message", message],
            cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    run.repo = work  # type: ignore[attr-defined]
    return run


def test_a_request_that_is_not_an_edit_changes_nothing(aider, llmsim: LLMSim) -> None:  # type: ignore[no-untyped-def]
    out = aider("What does calc.py do?")
    reply = llmsim.requests[-1]
    assert "SEARCH/REPLACE" in reply["messages"][0]["content"]  # aider's own edit format was asked for
    assert "<<<<<<<" not in out and '{"answer"' not in out and "Applied edit" not in out  # no block, no JSON
    assert (aider.repo / "calc.py").read_text() == CALC
    assert git(aider.repo, "status", "--porcelain") == "" and git(aider.repo, "log", "--oneline").count("\n") == 1


@pytest.mark.parametrize("edit_format", ["diff", "whole", "udiff"])
def test_a_literal_edit_is_applied_and_committed(aider, edit_format: str) -> None:  # type: ignore[no-untyped-def]
    out = aider("add the line # done to calc.py", "--edit-format", edit_format)
    assert "Applied edit to calc.py" in out, out[-2000:]
    assert (aider.repo / "calc.py").read_text() == CALC + "# done\n"
    assert git(aider.repo, "log", "-1", "--format=%s") == "chore: update calc.py\n"  # one conventional line
    assert git(aider.repo, "status", "--porcelain") == ""


def test_a_new_file_with_its_text(aider) -> None:  # type: ignore[no-untyped-def]
    aider("create hello.txt saying hi")
    assert (aider.repo / "hello.txt").read_text() == "hi\n"
    assert git(aider.repo, "status", "--porcelain") == ""


def test_a_scripted_edit_is_applied(aider, llmsim: LLMSim) -> None:  # type: ignore[no-untyped-def]
    block = "calc.py\n```\n<<<<<<< SEARCH\n    return a + b\n=======\n    return b + a\n>>>>>>> REPLACE\n```\n"
    llmsim.load_scenario({"rules": [{"match": {"input_contains": "swap"}, "times": 1, "text": block}]})
    aider("swap the operands")
    assert (aider.repo / "calc.py").read_text() == "def add(a, b):\n    return b + a\n"
    assert git(aider.repo, "status", "--porcelain") == ""
