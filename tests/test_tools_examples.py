"""The examples run end to end against a real server: the openai SDK loop and the OpenAI Agents SDK."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from llmsim.testing import ServerProcess

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.mark.parametrize("script", ["agent_loop.py", "agents_sdk.py"])
def test_example_agent_calls_the_tool_and_answers_from_its_output(server: ServerProcess, script: str) -> None:
    result = subprocess.run([sys.executable, str(EXAMPLES / script)], capture_output=True, text=True, timeout=120,
                            env={**os.environ, "LLMSIM_BASE_URL": server.base_url})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("tool call: get_weather") and "Paris" in line for line in lines)
    answer = next(line for line in lines if line.startswith("answer: "))
    assert "get_weather returned" in answer and "temperature_c: 21" in answer
