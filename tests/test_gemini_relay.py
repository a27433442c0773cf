"""The Gemini API and embeddings through the relaying backends: forwarded to an upstream (here another LLMSim, which
checks the key) with `x-goog-api-key` to the request's own `models/{model}:{method}`, recorded as cassettes, and
answered again from them. One replay server with `--on-miss proxy` does all three: a miss is forwarded and
recorded, a repeat is replayed."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from stateful import recording_relay

KEY = "goog-upstream-key"
ASK = {"contents": [{"role": "user", "parts": [{"text": "What is a relay?"}]}]}


def test_forwarded_recorded_and_replayed(tmp_path: Path) -> None:
    tapes = tmp_path / "cassettes"
    with recording_relay(tapes, KEY, "/v1beta") as (upstream, relay):
        from google import genai
        from google.genai import types

        client = genai.Client(api_key="client-key", http_options=types.HttpOptions(base_url=relay.url,
                                                                                   api_version="v1beta"))
        made, again = (client.models.generate_content(model="gemini-2.0-flash", contents="What is a relay?")
                       for _ in range(2))
        streams = ["".join(chunk.text or "" for chunk in client.models.generate_content_stream(
            model="gemini-2.0-flash", contents="Stream a relay")) for _ in range(2)]
        vectors = [client.models.embed_content(model="text-embedding-004", contents="relay").embeddings[0].values
                   for _ in range(2)]
        client.close()
        forwarded = httpx.get(f"{upstream.url}/llmsim/admin/requests", headers={"Authorization": f"Bearer {KEY}"})
        relayed_log = httpx.get(f"{relay.url}/llmsim/admin/requests").json()["data"]
    assert made.text and again.text == made.text and made.usage_metadata.total_token_count > 0
    assert streams[0] and streams[1] == streams[0]
    assert len(vectors[0]) == 768 and vectors[1] == vectors[0]
    assert len(forwarded.json()["data"]) == 3  # one of each; the repeats came from the cassettes
    assert {entry["endpoint"] for entry in relayed_log} == {"gemini"}
    recorded = [json.loads(path.read_text()) for path in sorted(tapes.glob("*.json"))]
    assert sorted(tape["endpoint"] for tape in recorded) == [
        "models/gemini-2.0-flash:generateContent", "models/gemini-2.0-flash:streamGenerateContent?alt=sse",
        "models/text-embedding-004:batchEmbedContents"]
    assert KEY not in "".join(path.read_text() for path in tapes.glob("*.json"))


def test_openai_embeddings_forwarded_recorded_and_replayed(tmp_path: Path) -> None:
    import openai

    tapes = tmp_path / "cassettes"
    with recording_relay(tapes, KEY) as (upstream, relay):
        client = openai.OpenAI(base_url=relay.base_url, api_key="client-key", max_retries=0)
        made = [client.embeddings.create(model="text-embedding-3-small", input=["relay", "cassette"])
                for _ in range(2)]
        forwarded = httpx.get(f"{upstream.url}/llmsim/admin/requests", headers={"Authorization": f"Bearer {KEY}"})
    assert [len(item.embedding) for item in made[0].data] == [1536, 1536] and made[0].usage.prompt_tokens > 0
    assert [item.embedding for item in made[1].data] == [item.embedding for item in made[0].data]
    assert len(forwarded.json()["data"]) == 1
    (tape,) = [json.loads(path.read_text()) for path in tapes.glob("*.json")]
    assert tape["endpoint"] == "embeddings" and tape["request"]["input"] == ["relay", "cassette"]
