"""Memory a client controls is bounded in bytes: the scenario transcript, rate-limit buckets, model names."""

from __future__ import annotations

import json

import httpx
import openai
import pytest

from llmsim.chaos.ratelimit import Limits, RateLimiter
from llmsim.chaos.scenarios import TRANSCRIPT_BYTES, Transcript
from llmsim.testing import ServerProcess


def test_the_transcript_keeps_the_newest_requests_within_its_byte_budget(server: ServerProcess) -> None:
    padding = "x" * 1_000_000  # 1 MB in a field nothing tokenizes, to keep the test fast
    count = TRANSCRIPT_BYTES // len(padding) + 4
    with httpx.Client(base_url=server.base_url, timeout=60) as client:
        httpx.post(f"{server.url}/llmsim/admin/scenarios/reset").raise_for_status()
        for i in range(count):
            body = {"model": "gpt-4o", "input": "hi", "user": padding, "store": False, "metadata": {"i": str(i)}}
            assert client.post("/responses", json=body).status_code == 200
        kept = httpx.get(f"{server.url}/llmsim/admin/scenarios/transcript", timeout=60).json()["data"]
    assert sum(len(json.dumps(entry["request"], separators=(",", ":"))) for entry in kept) <= TRANSCRIPT_BYTES
    assert 0 < len(kept) < count
    assert [entry["request"]["metadata"]["i"] for entry in kept] == [str(i) for i in range(count - len(kept), count)]


def test_a_transcript_entry_over_the_whole_budget_is_kept_alone() -> None:
    transcript = Transcript(max_entries=10, max_bytes=100)
    transcript.append({"index": 0}, {"input": "small"})
    transcript.append({"index": 1}, {"input": "x" * 200})
    assert [entry["index"] for entry in transcript.entries()] == [1] and transcript.size > 100
    transcript.append({"index": 2}, {"input": "small"})
    assert [entry["index"] for entry in transcript.entries()] == [2] and transcript.size <= 100


def test_rate_limit_buckets_are_bounded_in_bytes_least_recent_first() -> None:
    limiter = RateLimiter(max_bytes=50_000)
    limits = Limits(rpm=10, tpm=1000)
    assert not limiter.acquire(("sk-kept", "gpt-4o"), Limits(rpm=1), 0).exceeded
    for i in range(1000):
        limiter.acquire((f"sk-{i}", "m" * 256), limits, 1)
        limiter.acquire(("sk-kept", "gpt-4o"), Limits(rpm=1), 0)  # used all along: never the one to go
    assert limiter.size <= 50_000 and len(limiter._buckets) < 200
    assert limiter.acquire(("sk-kept", "gpt-4o"), Limits(rpm=1), 0).exceeded == "requests"


def test_absurd_model_names_get_the_apis_400(client: openai.OpenAI) -> None:
    for create in (lambda model: client.responses.create(model=model, input="hi"),
                   lambda model: client.chat.completions.create(model=model,
                                                                messages=[{"role": "user", "content": "hi"}])):
        with pytest.raises(openai.BadRequestError) as raised:
            create("m" * 1_000_000)
        assert raised.value.code == "string_above_max_length" and raised.value.param == "model"
        assert "1000000" in raised.value.message
        create("m" * 256)
