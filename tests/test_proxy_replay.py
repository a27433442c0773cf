"""Record once, replay forever: a seeded sim LLMSim on 127.0.0.1 (paced at speed 1) is the upstream; a proxy
records cassettes in front of it; a fresh replay server answers from them with the same outputs, ids and
timing; `llmsim profile fit` recovers the upstream's profile from them."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import yaml

import llmsim.surfaces  # noqa: F401  # the surfaces registered: cassettes are named by their match keys
from llmsim.backends.cassette import file_name, load
from llmsim.config import DEFAULT_PROFILES_DIR
from llmsim.testing import ServerProcess, stop_all
from llmsim.timing.profiles import load_catalog

KEY = "sk-upstream-secret-0123456789abcdef"
KEY_ENV = "LLMSIM_TEST_UPSTREAM_KEY"
WEATHER = {"type": "function", "name": "get_weather", "description": "Weather in a city",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}
STREAMS = [f"Tell me about topic number {i}." for i in range(10)]


def sdk(server: ServerProcess, **headers: str) -> openai.OpenAI:
    """No keep-alive: a server stops at once, with no idle connection to wait out."""
    return openai.OpenAI(base_url=server.base_url, api_key="sk-client", max_retries=0,
                         default_headers={"Connection": "close", **headers})


# The replays whose test compares what they answer, not when: unpaced (the recorded waits, ~10 s of them, are
# test_replay_gives_the_same_streams_ids_and_timing's to keep).
UNPACED = {"X-LLMSim-Speed": "0"}


def timed_stream(client: openai.OpenAI, text: str, **options: Any) -> tuple[float, dict[str, Any]]:
    """(seconds to the first text delta, the final response) of one streamed request."""
    started = time.monotonic()
    ttft = None
    with client.responses.stream(model="gpt-4o", input=text, **options) as stream:
        for event in stream:
            if ttft is None and event.type == "response.output_text.delta":
                ttft = time.monotonic() - started
        final = stream.get_final_response()
    assert ttft is not None
    return ttft, final.model_dump()


def streams(client: openai.OpenAI, texts: list[str], **options: Any) -> list[tuple[float, dict[str, Any]]]:
    with ThreadPoolExecutor(len(texts)) as pool:
        return list(pool.map(lambda text: timed_stream(client, text, **options), texts))


def conversation(client: openai.OpenAI) -> dict[str, Any]:
    """A previous_response_id chain and a tool call answered by call_id, then by item_reference."""
    first = client.responses.create(model="gpt-4o", input="Plan a weekend in Lisbon.")
    second = client.responses.create(model="gpt-4o", input="Shorter, please.", previous_response_id=first.id)
    asked = client.responses.create(model="gpt-4o", input="What is the weather in Paris?", tools=[WEATHER],
                                    tool_choice="required")
    call = next(item for item in asked.output if item.type == "function_call")
    answered = client.responses.create(model="gpt-4o", previous_response_id=asked.id, tools=[WEATHER],
                                       input=[{"type": "function_call_output", "call_id": call.call_id,
                                               "output": '{"sky": "sunny"}'}])
    referenced = client.responses.create(model="gpt-4o", previous_response_id=asked.id, tools=[WEATHER], input=[
        {"type": "item_reference", "id": call.id},
        {"type": "function_call_output", "call_id": call.call_id, "output": '{"sky": "rainy"}'}])
    return {"first": first, "second": second, "asked": asked, "call": call, "answered": answered,
            "referenced": referenced}


def over_websocket(server: ServerProcess, **headers: str) -> list[Any]:
    with sdk(server, **headers).responses.connect() as connection:
        connection.response.create(model="gpt-4o", input="Over a WebSocket.")
        events = []
        for event in connection:
            events.append(event)
            if event.type == "response.completed":
                return events
    raise AssertionError("no response.completed")


def bad_request(client: openai.OpenAI) -> None:
    client.responses.create(model="gpt-4o", input="Too hot.", temperature=5)


def chats(client: openai.OpenAI) -> tuple[str, str]:
    messages = [{"role": "user", "content": "Say something about rivers."}]
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in
                       client.chat.completions.create(model="gpt-4o", messages=messages, stream=True)
                       if chunk.choices)
    whole = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "And lakes?"}])
    return streamed, str(whole.choices[0].message.content)


@pytest.fixture(scope="module")
def cassettes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cassettes")


@pytest.fixture(scope="module")
def servers(cassettes: Path) -> Iterator[list[ServerProcess]]:
    """[upstream, proxy, then the replay server once started]: the upstream and the proxy start side by side (the
    proxy asks its upstream nothing before a request), and all stop together after the module's last test (each
    stop waits about a second for its workers)."""
    upstream = ServerProcess("--seed", "7", "--speed", "1", "--api-key", KEY)
    proxy = ServerProcess("--backend", "proxy", "--upstream", upstream.base_url, "--record", str(cassettes),
                          "--upstream-api-key-env", KEY_ENV, env={KEY_ENV: KEY})
    running = [upstream.launch(), proxy.launch()]
    try:
        for server in running[:2]:
            server.wait_until_up()
        yield running
    finally:
        stop_all(running)


@pytest.fixture(scope="module")
def upstream(servers: list[ServerProcess]) -> ServerProcess:
    return servers[0]


@pytest.fixture(scope="module")
def proxy(servers: list[ServerProcess]) -> ServerProcess:
    return servers[1]


@pytest.fixture(scope="module")
def recording(proxy: ServerProcess, cassettes: Path) -> dict[str, Any]:
    """Recorded at speed 1, the upstream's paced waits side by side: the streams then the chats, the conversation
    (each answer waits for the one before) then the bad request, and the WebSocket. The warm-up comes first, and
    alone; a Responses request second (test_sequence_matching): the streams, conversation and WebSocket are
    Responses requests, and the chats start only after the streams."""
    client = sdk(proxy)
    warm_up = timed_stream(client, "Warm up.")[1]  # first-stream costs (the SDK's too) stay out of the timings

    def conversation_then_bad_request() -> tuple[dict[str, Any], BaseException | None]:
        talked = conversation(client)
        try:
            bad_request(client)
        except openai.BadRequestError as refused:
            return talked, refused
        return talked, None

    with ThreadPoolExecutor(3) as pool:
        streamed = pool.submit(lambda: (streams(client, STREAMS), chats(client)))
        talked = pool.submit(conversation_then_bad_request)
        websocket = pool.submit(over_websocket, proxy)
        (recorded_streams, recorded_chats), (turns, refused) = streamed.result(), talked.result()
        recorded = {"warm_up": warm_up, "streams": recorded_streams, **turns, "chats": recorded_chats,
                    "websocket": websocket.result()}
    with pytest.raises(openai.BadRequestError) as error:  # the upstream's own 400, passed through
        if refused is not None:
            raise refused
    return {**recorded, "error": error.value.body}


@pytest.fixture(scope="module")
def replay(recording: dict[str, Any], cassettes: Path, servers: list[ServerProcess]) -> ServerProcess:
    """Stopped with the upstream and the proxy (`servers`)."""
    server = ServerProcess("--backend", "replay", "--cassettes", str(cassettes), "--speed", "1").start()
    servers.append(server)
    # the first stream's costs, unpaced: the warm-up's recorded 2 s of pacing would warm nothing more
    timed_stream(sdk(server), "Warm up.", extra_headers={"X-LLMSim-Speed": "0"})
    return server


def test_cassettes_are_readable_stably_named_and_keyless(recording: dict[str, Any], cassettes: Path,
                                                         proxy: ServerProcess) -> None:
    recorded = load(cassettes)
    assert len(recorded) == 1 + len(STREAMS) + 5 + 2 + 1 + 1  # one file per interaction
    for cassette in recorded:
        assert cassette.path is not None and cassette.path.stem == file_name(cassette)
        text = cassette.path.read_text()
        assert KEY not in text
        assert text.startswith('{\n  "llmsim_cassette": 1,')  # indented JSON, one field a line
    streamed = [c for c in recorded if c.endpoint == "responses" and c.stream]
    assert len(streamed) == 1 + len(STREAMS) + 1  # and the WebSocket one
    for cassette in streamed:
        assert cassette.events[0][1] == "response.created"
        assert [t for t, _, _ in cassette.events] == sorted(t for t, _, _ in cassette.events)
        assert "openai-processing-ms" in cassette.headers
    assert KEY not in proxy.log()


def test_replay_gives_the_same_streams_ids_and_timing(recording: dict[str, Any], replay: ServerProcess,
                                                      cassettes: Path) -> None:
    replayed = streams(sdk(replay), STREAMS)
    for (_, response), (_, recorded_response) in zip(replayed, recording["streams"], strict=True):
        assert response == recorded_response
    offsets = {c.request["input"]: next(t for t, kind, _ in c.events if kind == "response.output_text.delta")
               for c in load(cassettes) if c.stream and c.endpoint == "responses"}
    for text, (ttft, _) in zip(STREAMS, replayed, strict=True):
        assert ttft >= offsets[text] * 0.99  # never earlier than recorded
    # medians: ten streams at once on a shared machine make single timings noisy on both sides
    recorded_ttft = statistics.median(ttft for ttft, _ in recording["streams"])
    replayed_ttft = statistics.median(ttft for ttft, _ in replayed)
    assert abs(replayed_ttft - recorded_ttft) <= 0.3 * recorded_ttft, (replayed_ttft, recorded_ttft)


def test_replay_keeps_the_chain_and_the_tool_call(recording: dict[str, Any], replay: ServerProcess) -> None:
    replayed = conversation(sdk(replay, **UNPACED))
    for name in ("first", "second", "asked", "answered", "referenced"):
        assert replayed[name].model_dump() == recording[name].model_dump(), name
    assert replayed["second"].previous_response_id == replayed["first"].id
    assert replayed["call"].call_id == recording["call"].call_id
    assert sdk(replay).responses.retrieve(recording["second"].id).output_text == recording["second"].output_text


def test_replay_chat_completions(recording: dict[str, Any], replay: ServerProcess) -> None:
    assert chats(sdk(replay, **UNPACED)) == recording["chats"]


def test_a_miss_names_the_nearest_cassette(recording: dict[str, Any], replay: ServerProcess,
                                           cassettes: Path) -> None:
    with pytest.raises(openai.NotFoundError) as caught:
        sdk(replay).responses.create(model="gpt-4o", input="Tell me about topic number 77.")
    error = caught.value.body
    assert error["code"] == "cassette_not_found" and error["type"] == "invalid_request_error"  # type: ignore[index]
    message = error["message"]  # type: ignore[index]
    assert "no cassette" in message and "differs in: input." in message
    nearest = message.split("Nearest: ")[1].split(",")[0]
    assert (cassettes / nearest).is_file()
    assert "topic number" in json.dumps(json.loads((cassettes / nearest).read_text())["request"])


def test_websocket_mode_through_proxy_and_replay(recording: dict[str, Any], replay: ServerProcess) -> None:
    live = recording["websocket"]
    replayed = over_websocket(replay, **UNPACED)
    assert [e.model_dump() for e in replayed] == [e.model_dump() for e in live]
    assert [e.sequence_number for e in live] == list(range(len(live)))


def test_upstream_errors_pass_through_and_replay(recording: dict[str, Any], replay: ServerProcess) -> None:
    with pytest.raises(openai.BadRequestError) as replayed:
        bad_request(sdk(replay))
    assert replayed.value.body == recording["error"]
    assert recording["error"]["param"] == "temperature"


def test_faults_and_rate_limits_apply_in_front(recording: dict[str, Any], proxy: ServerProcess,
                                               cassettes: Path) -> None:
    client, before = sdk(proxy), len(load(cassettes))
    with pytest.raises(openai.InternalServerError):
        client.responses.create(model="gpt-4o", input="Fail.", extra_headers={"X-LLMSim-Fault": "500"})
    with client.responses.stream(model="gpt-4o", input="Cut short.",
                                 extra_headers={"X-LLMSim-Fault": "stream_failed;after_events=4"}) as stream:
        events = list(stream)
    assert events[-1].type == "response.failed"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    admin = httpx.Client(base_url=f"{proxy.url}/llmsim/admin", headers={"Connection": "close"})
    try:
        admin.put("/faults", json={"rate_limits": {"rpm": 1}}).raise_for_status()
        client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Say something "
                                                                  "about rivers."}])
        with pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Again."}])
    finally:
        admin.put("/faults", json={})
        admin.post("/faults/reset")
        admin.close()
    assert len(load(cassettes)) == before + 1  # the refused and the cut requests were never recorded


def test_on_miss_proxy_records_the_miss(recording: dict[str, Any], upstream: ServerProcess, cassettes: Path,
                                        tmp_path: Path) -> None:
    for cassette in load(cassettes)[:3]:
        (tmp_path / cassette.path.name).write_text(cassette.path.read_text())  # type: ignore[union-attr]
    with ServerProcess("--backend", "replay", "--cassettes", str(tmp_path), "--speed", "0", "--on-miss", "proxy",
                       "--upstream", upstream.base_url, "--upstream-api-key-env", KEY_ENV,
                       env={KEY_ENV: KEY}) as replay:
        live = sdk(replay).responses.create(model="gpt-4o", input="Recorded on a miss.")
        assert len(list(tmp_path.glob("*.json"))) == 4
        assert sdk(replay).responses.create(model="gpt-4o", input="Recorded on a miss.").id == live.id


def test_exact_matching_with_the_simulator_on_a_miss(recording: dict[str, Any], cassettes: Path) -> None:
    with ServerProcess("--backend", "replay", "--cassettes", str(cassettes), "--speed", "0",
                       "--match", "exact", "--on-miss", "sim") as replay:
        first = sdk(replay).responses.create(model="gpt-4o", input="Plan a weekend in Lisbon.")
        assert first.id == recording["first"].id
        # the same request plus a field normalised matching ignores: simulated
        other = sdk(replay).responses.create(model="gpt-4o", input="Plan a weekend in Lisbon.", temperature=0.5)
        assert other.id != first.id and other.output_text


def test_sequence_matching(recording: dict[str, Any], cassettes: Path) -> None:
    with ServerProcess("--backend", "replay", "--cassettes", str(cassettes), "--speed", "0",
                       "--match", "sequence") as replay:
        first = sdk(replay).responses.create(model="gpt-4o", input="Anything at all.")  # the first recorded
        assert first.id == recording["warm_up"]["id"]
        with pytest.raises(openai.NotFoundError) as caught:  # the second recorded is no chat completion
            sdk(replay).chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "Hi"}])
        assert "1 of" in caught.value.message and "cassettes were played" in caught.value.message


def test_profile_fit_recovers_the_upstream_profile(proxy: ServerProcess, cassettes: Path, tmp_path: Path) -> None:
    client = sdk(proxy)

    def sample(i: int) -> str:
        events = list(client.responses.create(model="gpt-4o", input=f"Fit sample {i}.", max_output_tokens=16,
                                              stream=True))
        return events[-1].type

    # 40 short streams, ten at a time: ~0.65 s each, mostly the upstream's paced wait. The test runs alone
    # (tests/conftest.py ALONE), with every other test process waiting: one at a time it ran ~26 s, four ~7 s, ten
    # ~3.3 s. The seeded upstream draws the same waits at any concurrency: the fit came out at 399 ms and 9.1 ms.
    # Under xdist it runs in a process of its own, after the module's other tests: its cassettes are these streams.
    with ThreadPoolExecutor(10) as pool:
        assert set(pool.map(sample, range(40))) == {"response.incomplete"}
    output = tmp_path / "fitted" / "gpt-4o.yaml"
    done = subprocess.run([sys.executable, "-m", "llmsim", "profile", "fit", str(cassettes), "-o", str(output)],
                          capture_output=True, text=True, check=True)
    streamed = [c for c in load(cassettes) if c.stream and c.status == 200]
    assert f"ms ({len(streamed)} samples)" in done.stdout, done.stdout  # TTFT: one sample per stream
    timing = yaml.safe_load(output.read_text())["models"][0]["timing"]
    assert abs(timing["ttft_ms"]["p50"] - 450) <= 0.25 * 450, timing
    assert abs(timing["itl_ms"]["p50"] - 9) <= 0.25 * 9, timing
    fitted = load_catalog([DEFAULT_PROFILES_DIR, output.parent]).get("gpt-4o")  # what --profiles-dir loads
    assert fitted is not None and fitted.timing is not None
    assert fitted.timing.ttft_ms.p50 == timing["ttft_ms"]["p50"] and fitted.snapshot == "gpt-4o-2024-08-06"
