"""Messages through the relaying backends: the proxy forwards to an Anthropic-compatible upstream (here another
LLMSim, which checks the key) with `x-api-key`, records cassettes, and replay answers them again."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic

from llmsim.testing import ServerProcess

ASK = [{"role": "user", "content": "What is a relay?"}]
MODEL = "claude-sonnet-4-6"


def test_proxy_records_and_replay_answers(tmp_path: Path) -> None:
    tapes = tmp_path / "cassettes"
    tapes.mkdir()
    with ServerProcess("--speed", "0", "--seed", "3", "--api-key", "sk-ant-upstream-key") as upstream, \
            ServerProcess("--backend", "proxy", "--upstream", f"{upstream.url}/v1", "--upstream-api-key-env",
                          "UPSTREAM_KEY", "--record", str(tapes), env={"UPSTREAM_KEY": "sk-ant-upstream-key"}) as proxy:
        client = anthropic.Anthropic(base_url=proxy.url, api_key="client-key", max_retries=0)
        made = client.messages.create(model=MODEL, max_tokens=200, messages=ASK)
        with client.messages.stream(model=MODEL, max_tokens=200, messages=ASK, system="Be brief.") as stream:
            streamed = "".join(stream.text_stream)
            final = stream.get_final_message()
    assert made.content[0].text and streamed == final.content[0].text
    assert final.usage.output_tokens > 0
    recorded = [json.loads(path.read_text()) for path in sorted(tapes.glob("*.json"))]
    assert sorted(tape["endpoint"] for tape in recorded) == ["messages", "messages"]
    assert "sk-ant-upstream-key" not in "".join(path.read_text() for path in tapes.glob("*.json"))

    with ServerProcess("--backend", "replay", "--cassettes", str(tapes), "--speed", "0") as replay:
        client = anthropic.Anthropic(base_url=replay.url, api_key="k", max_retries=0)
        again = client.messages.create(model=MODEL, max_tokens=200, messages=ASK)
        with client.messages.stream(model=MODEL, max_tokens=200, messages=ASK, system="Be brief.") as stream:
            replayed = "".join(stream.text_stream)
    assert again.content[0].text == made.content[0].text and replayed == streamed
