"""The Node clients (tests/clients/node, pinned by its package-lock.json). `node check.mjs CLIENT` runs all of
a client's checks in one process, each on a clean server; a test per check then asserts that it passed (the
script asserts what the client saw) and what the server received."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

import httpx
import pytest

from clientkit import RATE_LIMIT_ONCE, retried, texts
from llmsim.testing import ServerProcess
from matrix import NODE_DIR
from optional import needs_node

pytestmark = needs_node()

SCRIPTS = {"openai (Node)": "openai", "Vercel AI SDK": "ai-sdk", "LangChain JS": "langchain",
           "OpenAI Agents JS": "agents", "Mastra": "mastra"}


def checks(script: str) -> list[str]:
    source = (NODE_DIR / f"{script}.mjs").read_text()
    return re.findall(r"^export (?:async function|const) (\w+)", source, flags=re.M)


CASES = [pytest.param(client, check, id=f"{script}-{check}")
         for client, script in SCRIPTS.items() for check in checks(script)]
_reports: dict[str, dict[str, Any]] = {}


def report(server: ServerProcess, script: str) -> dict[str, Any]:
    """Every check of one script, run once per session."""
    if script not in _reports:
        faults = {f"LLMSIM_FAULTS_FOR_{check}": json.dumps({"faults": [RATE_LIMIT_ONCE]})
                  for check in checks(script) if check.startswith("retry")}
        done = subprocess.run(["node", "check.mjs", script], cwd=NODE_DIR, capture_output=True, text=True,
                              timeout=300, env={**os.environ, "LLMSIM_URL": server.url, **faults})
        assert done.returncode == 0, f"node check.mjs {script}:\n{done.stderr[-3000:]}"
        _reports[script] = json.loads(done.stdout.strip().splitlines()[-1])
    return _reports[script]


@pytest.mark.parametrize(("client", "feature"), CASES)
def test_node(llmsim_server: ServerProcess, client: str, feature: str) -> None:
    outcome = report(llmsim_server, SCRIPTS[client])[feature]
    assert outcome["passed"], outcome["error"]
    result, bodies = outcome["result"], outcome["requests"]
    sent = texts(bodies[-1].get("input") or bodies[-1].get("messages"))
    if feature.startswith("streaming"):
        assert any(body.get("stream") for body in bodies)
    elif feature == "server_state":
        assert bodies[-1]["previous_response_id"] == result["first_id"] and "Ada" not in sent
    elif feature == "client_history":
        assert "My name is Ada" in sent
        references = {item["id"] for item in bodies[-1].get("input", []) if item.get("type") == "item_reference"}
        if references:  # the AI SDK's way: earlier output items by id
            stored = httpx.get(f"{llmsim_server.base_url}/responses/{result['first_id']}").json()
            assert references <= {item["id"] for item in stored["output"]}
        else:
            assert result["first_text"][:40] in sent
    elif feature.startswith("tools") or feature.endswith("tool_loop"):
        assert "sunny and 22 C" in sent  # the tool's output went back to the model
    elif feature.startswith("retry"):
        retried(outcome["fault_log"])
