"""The Node clients (tests/clients/node, pinned by its package-lock.json): one `node check.mjs CLIENT CHECK`
per test against the session's server; the script asserts what the client sees, this test what the server
received."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import pytest

from clientkit import RATE_LIMIT_ONCE, retried, texts
from llmsim.pytest_plugin import LLMSim
from matrix import NODE_DIR

SCRIPTS = {"openai (Node)": "openai", "Vercel AI SDK": "ai-sdk", "LangChain JS": "langchain"}


def checks(script: str) -> list[str]:
    source = (NODE_DIR / f"{script}.mjs").read_text()
    return re.findall(r"^export (?:async function|const) (\w+)", source, flags=re.M)


CASES = [pytest.param(client, check, id=f"{script}-{check}")
         for client, script in SCRIPTS.items() for check in checks(script)]


def run_node(llmsim: LLMSim, script: str, check: str) -> dict[str, Any]:
    done = subprocess.run(["node", "check.mjs", script, check], cwd=NODE_DIR, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "LLMSIM_BASE_URL": llmsim.base_url})
    assert done.returncode == 0, f"node {script} {check} failed:\n{done.stderr[-3000:]}{done.stdout[-1000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("client", "feature"), CASES)
def test_node(llmsim: LLMSim, client: str, feature: str) -> None:
    if feature == "retry":
        llmsim.set_faults(RATE_LIMIT_ONCE)
    result = run_node(llmsim, SCRIPTS[client], feature)
    bodies = llmsim.requests
    sent = texts(bodies[-1].get("input") or bodies[-1].get("messages"))
    if feature.startswith("streaming"):
        assert any(body.get("stream") for body in bodies)
    elif feature == "server_state":
        assert bodies[-1]["previous_response_id"] == result["first_id"] and "Ada" not in sent
    elif feature == "client_history":
        assert "My name is Ada" in sent and result["first_text"][:40] in sent
    elif feature.startswith("tools") or feature.endswith("tool_loop"):
        assert "sunny and 22 C" in sent  # the tool's output went back to the model
    elif feature == "retry":
        retried(llmsim)
