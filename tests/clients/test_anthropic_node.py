"""The Node clients of the Messages API (tests/clients/node, pinned by its package-lock.json): `@anthropic-ai/sdk`
(anthropic.mjs) and the Vercel AI SDK's anthropic provider (anthropic-ai-sdk.mjs). `node check.mjs SCRIPT` runs
each script's checks in one process, each on a clean server; a test per check asserts that it passed and what
the server received."""

from __future__ import annotations

import pytest

from clientkit import retried, texts
from llmsim.testing import ServerProcess
from optional import needs_node
from test_node import checks, report

pytestmark = needs_node()

SCRIPTS = ("anthropic", "anthropic-ai-sdk")
CASES = [pytest.param(script, check, id=f"{script}-{check}") for script in SCRIPTS for check in checks(script)]


@pytest.mark.parametrize(("script", "check"), CASES)
def test_anthropic_node(llmsim_server: ServerProcess, script: str, check: str) -> None:
    outcome = report(llmsim_server, script)[check]
    assert outcome["passed"], outcome["error"]
    bodies = outcome["requests"]
    assert all(entry["endpoint"] == "messages" for entry in outcome["fault_log"])
    if check == "streaming":
        assert any(body.get("stream") for body in bodies)
    elif check in ("tools", "tool_loop"):
        assert "sunny and 22 C" in texts(bodies[-1]["messages"][-1]["content"])  # the tool's output went back
        assert any(body.get("tools") for body in bodies)
    elif check == "reasoning":
        assert {body["thinking"]["type"] for body in bodies} == {"enabled", "adaptive"}
    elif check == "structured":  # output_config.format (json_schema): the object comes from its schema
        assert all(body.get("output_config", {}).get("format", {}).get("type") == "json_schema" or
                   body.get("output_format", {}).get("type") == "json_schema" for body in bodies), bodies
    elif check == "retry":
        retried(outcome["fault_log"])
