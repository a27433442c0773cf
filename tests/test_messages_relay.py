"""Messages through the relaying backends: forwarded to an Anthropic-compatible upstream (here another LLMSim,
which checks the key) with `x-api-key`, recorded as cassettes, and answered again from them. One replay server
with `--on-miss proxy` does all three: a miss is forwarded and recorded, a repeat is replayed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from optional import needs
from stateful import recording_relay

pytestmark = needs("anthropic")

ASK = [{"role": "user", "content": "What is a relay?"}]
MODEL = "claude-sonnet-4-6"
KEY = "sk-ant-upstream-key"


def test_forwarded_recorded_and_replayed(tmp_path: Path) -> None:
    tapes = tmp_path / "cassettes"
    with recording_relay(tapes, KEY) as (upstream, relay):
        import anthropic  # here, not at the top: every xdist process collects this module; the SDK costs ~3 s

        client = anthropic.Anthropic(base_url=relay.url, api_key="client-key", max_retries=0)
        made, again = (client.messages.create(model=MODEL, max_tokens=200, messages=ASK) for _ in range(2))
        streams = []
        for _ in range(2):
            with client.messages.stream(model=MODEL, max_tokens=200, messages=ASK, system="Be brief.") as stream:
                streams.append(("".join(stream.text_stream), stream.get_final_message()))
        client.close()
        measured = httpx.get(f"{relay.url}/metrics").text
        forwarded = httpx.get(f"{upstream.url}/llmsim/admin/requests", headers={"Authorization": f"Bearer {KEY}"})
    assert made.content[0].text and again.content[0].text == made.content[0].text
    (first, final), (replayed, _) = streams
    assert first == final.content[0].text == replayed and final.usage.output_tokens > 0
    assert len(forwarded.json()["data"]) == 2  # one of each; the repeats came from the cassettes
    recorded = [json.loads(path.read_text()) for path in sorted(tapes.glob("*.json"))]
    assert sorted(tape["endpoint"] for tape in recorded) == ["messages", "messages"]
    assert KEY not in "".join(path.read_text() for path in tapes.glob("*.json"))
    # the relayed streams' tokens were timed as they left: a first token each, and the gaps between the others
    assert _count(measured, "vllm:time_to_first_token_seconds") == 4  # the two streams and the two JSON answers
    assert _count(measured, "vllm:inter_token_latency_seconds") > 0


def _count(metrics: str, histogram: str) -> float:
    """A histogram's `_count`, summed over its series."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in metrics.splitlines() if line.startswith(f"{histogram}_count"))
