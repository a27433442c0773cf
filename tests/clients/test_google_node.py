"""The Vercel AI SDK's Google provider (`@ai-sdk/google`, tests/clients/node/google-ai-sdk.mjs, pinned by its
package-lock.json) against LLMSim's Gemini API: `node check.mjs google-ai-sdk` runs each check on a clean server;
a test per check asserts that it passed and what the server received."""

from __future__ import annotations

import pytest

from llmsim.testing import ServerProcess
from test_node import checks, report

SCRIPT = "google-ai-sdk"


@pytest.mark.parametrize("check", checks(SCRIPT))
def test_google_ai_sdk(llmsim_server: ServerProcess, check: str) -> None:
    outcome = report(llmsim_server, SCRIPT)[check]
    assert outcome["passed"], outcome["error"]
    bodies, log = outcome["requests"], outcome["fault_log"]
    expected = "gemini"
    assert log and all(entry["endpoint"] == expected for entry in log)
    if check == "tool_loop":
        assert any(part.get("functionResponse") for part in bodies[-1]["contents"][-1]["parts"])
        assert bodies[0]["tools"][0]["functionDeclarations"][0]["name"] == "getWeather"
    elif check == "structured":
        assert bodies[0]["generationConfig"]["responseMimeType"] == "application/json"
    elif check == "reasoning":
        assert bodies[0]["generationConfig"]["thinkingConfig"]["includeThoughts"] is True
