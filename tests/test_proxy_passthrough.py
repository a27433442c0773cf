"""A proxy that does not record forwards the upstream's SSE bytes as they come, yet finds in them what it needs:
the final response for its store, the usage for rate limits and metrics. A stream fault or a WebSocket client
gets the events cut out of the bytes. Upstream: a seeded sim LLMSim on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest
from prometheus_client.parser import text_string_to_metric_families

from llmsim.metrics.meter import DELTA_EVENT, Tally
from llmsim.responses.surface import RESPONSES
from llmsim.shared.rawsse import events
from llmsim.shared.relayed import RelayedStream
from llmsim.testing import ServerProcess
from llmsim.timing.pricing import COST_HEADER

BODY = {"model": "gpt-4o", "input": "Tell me about lighthouses.", "stream": True}


@pytest.fixture(scope="module")
def upstream(server: ServerProcess) -> ServerProcess:
    """The session's server: an upstream needs no flags of its own (a start costs a core 1.5 s)."""
    return server


@pytest.fixture(scope="module")
def proxy(upstream: ServerProcess) -> Iterator[ServerProcess]:
    with ServerProcess("--backend", "proxy", "--upstream", upstream.base_url, "--upstream-keyless") as server:
        yield server


def sdk(server: ServerProcess) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="sk-client", max_retries=0)


def first_data(text: str) -> dict:
    return json.loads(text.split("data: ", 2)[1].split("\n", 1)[0])


def test_the_stream_is_the_upstreams_bytes_and_is_stored(proxy: ServerProcess, upstream: ServerProcess) -> None:
    sent = httpx.post(f"{proxy.base_url}/responses", json=BODY, timeout=30).text
    response_id = first_data(sent)["response"]["id"]
    upstream_stored = httpx.get(f"{upstream.base_url}/responses/{response_id}", params={"stream": "true"}).text
    assert sent.rsplit("\n: ", 1)[0] + "\n" == upstream_stored  # byte for byte, the upstream's cost comment too
    assert sent.rsplit("\n: ", 1)[1].startswith(COST_HEADER)
    proxy_stored = httpx.get(f"{proxy.base_url}/responses/{response_id}", params={"stream": "true"}).text
    assert proxy_stored == upstream_stored  # the proxy's own store, cut into events only now
    assert sdk(proxy).responses.retrieve(response_id).status == "completed"


def test_the_sdk_streams_chains_and_chats_through(proxy: ServerProcess) -> None:
    client = sdk(proxy)
    with client.responses.stream(model="gpt-4o", input="Plan a weekend in Lisbon.") as stream:
        texts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert final.status == "completed" and "".join(texts) == final.output_text
    second = client.responses.create(model="gpt-4o", input="Shorter.", previous_response_id=final.id)
    assert second.previous_response_id == final.id
    chunks = list(client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}],
                                                 stream=True, stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


def test_metrics_count_the_forwarded_tokens(upstream: ServerProcess) -> None:
    with ServerProcess("--backend", "proxy", "--upstream", upstream.base_url, "--upstream-keyless") as proxy:
        last = list(sdk(proxy).responses.create(**BODY))[-1]
        samples = {(s.name, s.labels.get("model_name")): s.value for family in
                   text_string_to_metric_families(httpx.get(f"{proxy.url}/metrics").text) for s in family.samples}
    assert samples[("vllm:generation_tokens_total", "gpt-4o")] == last.response.usage.output_tokens
    assert samples[("vllm:time_to_first_token_seconds_count", "gpt-4o")] == 1
    deltas = httpx.get(f"{upstream.base_url}/responses/{last.response.id}", params={"stream": "true"}).text
    assert samples[("vllm:inter_token_latency_seconds_count", "gpt-4o")] == deltas.count("text.delta\n") - 1


def test_a_stream_fault_and_websocket_get_the_events(proxy: ServerProcess) -> None:
    client = sdk(proxy)
    with client.responses.stream(model="gpt-4o", input="Cut short.",
                                 extra_headers={"X-LLMSim-Fault": "stream_failed;after_events=4"}) as stream:
        cut = list(stream)
    assert [e.type for e in cut][-1] == "response.failed" and len(cut) == 5
    assert [e.sequence_number for e in cut] == list(range(5))
    with client.responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="Over a WebSocket.")
        kinds = []
        for event in connection:
            kinds.append(event.type)
            if event.type == "response.completed":
                break
    assert kinds[0] == "response.created" and "response.output_text.delta" in kinds


def test_events_are_cut_from_any_reads_and_line_ends() -> None:
    stream = b'event: a\r\ndata: {"x":1}\r\n\r\n: comment\n\nevent: message\ndata: one\ndata: two\n\ndata: [DONE]'
    for size in (1, 2, 3, 7, len(stream)):
        reads = [stream[i:i + size] for i in range(0, len(stream), size)]
        assert list(events(reads)) == [("a", '{"x":1}'), ("", "one\ntwo"), ("", "[DONE]")], size


def test_the_final_event_is_found_however_the_reads_cut_it() -> None:
    final = {"type": "response.completed", "response": {"id": "resp_1", "usage": {"input_tokens": 3,
                                                                                  "output_tokens": 2}}}
    stream = (b'event: response.output_text.delta\ndata: {"delta":"the response.completed event"}\n\n'
              b"event: response.completed\ndata: " + json.dumps(final).encode() + b"\n\n")
    for size in (1, 5, 16, len(stream)):
        watch, buffer, seen_at = RelayedStream(RESPONSES), bytearray(), None
        tally, tokens = Tally(DELTA_EVENT), 0
        for i in range(0, len(stream), size):
            buffer += stream[i:i + size]
            tokens += tally.count(stream[i:i + size])
            if seen_at is None and watch.observe_raw(buffer):
                seen_at = len(buffer)
        assert seen_at == len(stream) and watch.response == final["response"], size  # not in the text, not early
        assert tokens == 1 and watch.finish().usage.output_tokens == 2  # type: ignore[union-attr]


def test_a_forwarded_stream_is_stored_on_redis_and_replays_whole(upstream: ServerProcess) -> None:
    from llmsim.testing import RedisServer

    with RedisServer() as redis, ServerProcess("--backend", "proxy", "--upstream", upstream.base_url,
                                               "--upstream-keyless", "--store", redis.url) as server:
        sent = httpx.post(f"{server.base_url}/responses", json=BODY, timeout=30)
        assert sent.status_code == 200
        response_id = first_data(sent.text)["response"]["id"]
        stored = httpx.get(f"{server.base_url}/responses/{response_id}", params={"stream": "true"}).text
    assert stored == sent.text.rsplit("\n: ", 1)[0] + "\n"  # the bytes kept raw, cut into events on replay
