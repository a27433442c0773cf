"""A fleet on one real Redis (`redis-server` on a free port): two servers x two workers behave as one server.

Rate limits, fault schedules, scenarios, chains, conversations and background responses are exact across
servers; the stores keep the same limits as memory and SQLite; losing Redis gives 503s and nothing
acknowledged is lost when it returns.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import openai
import pytest
import redis

from llmsim.store import StoredConversation, StoredResponse, open_stores
from llmsim.store.redis_client import Batch, Guard, Scripts
from llmsim.store.redis_client import connect as redis_connect
from llmsim.testing import RedisServer, ServerProcess, free_port
from stateful import PACED, slow_profiles, until, wait_final

Fleet = tuple[ServerProcess, ServerProcess]
# A model that thinks for 2.5 s before its first token (when a request asks for speed 1): a follower waits.
QUIET_PROFILE = """
models:
  - id: quiet-model
    timing:
      ttft_ms: {kind: normal, mean: 2500, stddev: 0}
      itl_ms: {kind: normal, mean: 1, stddev: 0}
      prefill_tokens_per_s: 1000000
      reasoning_tokens_per_s: 1000
"""


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def fleet_servers(redis_server: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    """Two servers of two workers each on one Redis, started once for the module."""
    profiles = slow_profiles(tmp_path_factory.mktemp("profiles"))
    (profiles / "quiet.yaml").write_text(QUIET_PROFILE)
    servers = [ServerProcess("--speed", "0", "--store", redis_server.url, "--workers", "2", "--profiles-dir",
                             str(profiles), startup_timeout=120) for _ in range(2)]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(ServerProcess.start, servers))
    yield servers[0], servers[1]
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(ServerProcess.stop, servers))


@pytest.fixture
def fleet(fleet_servers: Fleet) -> Fleet:
    """The module's fleet with no faults, no limits, no scenario and empty logs, set through its admin API."""
    a, _ = fleet_servers
    assert httpx.put(f"{a.url}/llmsim/admin/faults", json={}).status_code == 200
    assert httpx.post(f"{a.url}/llmsim/admin/faults/reset").status_code == 200
    assert httpx.delete(f"{a.url}/llmsim/admin/scenarios").status_code == 200
    return fleet_servers


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The module's Redis, database 1 (the fleet uses 0), emptied for the test."""
    url = redis_server.url.rsplit("/", 1)[0] + "/1"
    redis.Redis.from_url(url).flushdb()
    return url


@pytest.fixture
def connect() -> Iterator[Callable[..., openai.OpenAI]]:
    made: list[openai.OpenAI] = []

    def connect(server: ServerProcess, **options: object) -> openai.OpenAI:
        made.append(openai.OpenAI(base_url=server.base_url, api_key="sk-test", **{"max_retries": 0, **options}))
        return made[-1]

    yield connect
    for client in made:
        client.close()


def ask(client: openai.OpenAI, text: str = "hello", **body: object) -> openai.types.responses.Response:
    return client.responses.create(**{"model": "gpt-4o", "input": text, **body})  # type: ignore[call-overload]


def statuses(clients: list[openai.OpenAI], n: int) -> list[int]:
    """`n` requests, round-robin over the clients, a few at a time; the HTTP status of each."""
    def one(i: int) -> int:
        try:
            ask(clients[i % len(clients)])
            return 200
        except openai.APIStatusError as exc:
            return exc.status_code

    with ThreadPoolExecutor(4) as pool:
        return list(pool.map(one, range(n)))


def test_a_fleet_server_starts_and_answers_without_a_warning(fleet: Fleet,
                                                             connect: Callable[..., openai.OpenAI]) -> None:
    """The redis package, imported in the process that forks the workers to check that Redis answers, held ssl's
    classes from before gevent patched them in each worker: a MonkeyPatchWarning per worker, in every user's log."""
    for server in fleet:
        assert ask(connect(server)).status == "completed"
        assert "Warning" not in server.log(), server.log()


def test_rpm_admits_exactly_its_limit_fleet_wide(fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    limits = {"rate_limits": {"rpm": 8, "tpm": 1_000_000}}
    assert httpx.put(f"{b.url}/llmsim/admin/faults", json=limits).status_code == 200
    results = statuses([connect(a), connect(b)], 20)
    assert results.count(200) == 8 and results.count(429) == 12
    counters = httpx.get(f"{b.url}/llmsim/admin/faults/counters").json()
    assert counters["rate_limited"] == 12 and counters["requests"] == 20
    with pytest.raises(openai.RateLimitError) as caught:
        ask(connect(a))
    headers = caught.value.response.headers
    assert headers["x-ratelimit-limit-requests"] == "8" and headers["x-ratelimit-remaining-requests"] == "0"
    assert 0 < int(headers["retry-after-ms"]) <= 7500 and headers["x-ratelimit-limit-tokens"] == "1000000"


def test_itpm_and_otpm_are_counted_fleet_wide(fleet: Fleet) -> None:
    """Messages requests alternating between the servers share one ITPM and one OTPM bucket: input counted at
    admission, output reserved from max_tokens and settled, on either server, to the output made."""
    a, b = fleet
    body = {"model": "claude-sonnet-4-6", "max_tokens": 50, "messages": [{"role": "user", "content": "Hello"}]}
    headers = {"anthropic-version": "2023-06-01", "x-api-key": "fleet-itpm"}
    size = httpx.post(f"{a.url}/v1/messages/count_tokens", json=body, headers=headers).json()["input_tokens"]
    limits = {"rate_limits": {"itpm": 4 * size + size // 2, "otpm": 600}}  # 4 fit; a 5th waits seconds
    assert httpx.put(f"{b.url}/llmsim/admin/faults", json=limits).status_code == 200
    answers = [httpx.post(f"{server.url}/v1/messages", json=body, headers=headers) for server in (a, b, a, b, a)]
    assert [answer.status_code for answer in answers] == [200, 200, 200, 200, 429]
    assert [int(answer.headers["anthropic-ratelimit-input-tokens-remaining"]) for answer in answers[:2]] == [
        limits["rate_limits"]["itpm"] - size, limits["rate_limits"]["itpm"] - 2 * size]
    assert "input tokens per minute" in answers[4].json()["error"]["message"]
    assert answers[4].json()["error"]["type"] == "rate_limit_error" and "retry-after" in answers[4].headers

    headers["x-api-key"] = "fleet-otpm"
    first = httpx.post(f"{a.url}/v1/messages", json={**body, "max_tokens": 400}, headers=headers)
    assert first.headers["anthropic-ratelimit-output-tokens-remaining"] == "200"  # 400 reserved
    made = first.json()["usage"]["output_tokens"]
    assert made < 400  # an answer shorter than its cap, so settling gives tokens back
    second = httpx.post(f"{b.url}/v1/messages", json={**body, "max_tokens": 600 - made}, headers=headers)
    assert second.status_code == 200, second.text  # fits only once the first was settled: 600 - made are left
    third = httpx.post(f"{a.url}/v1/messages", json={**body, "max_tokens": 600}, headers=headers)
    assert third.status_code == 429 and "output tokens per minute" in third.json()["error"]["message"]
    counters = httpx.get(f"{a.url}/llmsim/admin/faults/counters").json()
    assert counters["rate_limited"] == 2


def test_first_n_fault_set_on_one_server_fires_n_times_fleet_wide(
        fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    config = httpx.put(f"{a.url}/llmsim/admin/faults", json={"faults": [{"kind": "server_error", "first": 3}]})
    assert config.status_code == 200
    assert httpx.get(f"{b.url}/llmsim/admin/faults").json()["faults"][0]["first"] == 3
    results = statuses([connect(a), connect(b)], 12)
    assert results.count(500) == 3 and results.count(200) == 9
    assert httpx.get(f"{b.url}/llmsim/admin/faults/counters").json()["faults"] == {"server_error": 3}
    log = httpx.get(f"{a.url}/llmsim/admin/requests").json()["data"]
    assert [entry["index"] for entry in log] == list(range(1, 13))
    assert sorted(entry["status"] for entry in log) == [200] * 9 + [500] * 3

    assert httpx.post(f"{b.url}/llmsim/admin/faults/reset").status_code == 200  # schedules restart fleet-wide
    assert statuses([connect(a), connect(b)], 4).count(500) == 3


def test_a_chain_and_a_conversation_cross_servers(fleet: Fleet,
                                                  connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    on_a, on_b = connect(a), connect(b)
    first = ask(on_a, "My name is Ada.")
    second = ask(on_b, "What is my name?", previous_response_id=first.id)
    third = ask(on_a, "And again?", previous_response_id=second.id)
    items = on_b.responses.input_items.list(third.id, order="asc").data
    assert [item.id for item in items] == [item.id for item in on_a.responses.input_items.list(third.id).data][::-1]
    assert on_b.responses.retrieve(first.id).output_text == first.output_text

    conversation = on_a.conversations.create(metadata={"topic": "fleet"}, items=[
        {"type": "message", "role": "user", "content": "Hi from A"}])
    reply = ask(on_b, "Hi from B", conversation=conversation.id)
    listed = on_a.conversations.items.list(conversation.id, order="asc").data
    assert len(listed) == 3 and listed[-1].id == reply.output[0].id  # type: ignore[union-attr]
    on_b.conversations.update(conversation.id, metadata={"topic": "moved"})
    assert on_a.conversations.retrieve(conversation.id).metadata == {"topic": "moved"}
    assert on_b.responses.delete(first.id) is None
    with pytest.raises(openai.NotFoundError):
        on_a.responses.retrieve(first.id)


def test_a_stream_replayed_on_another_server_is_the_stream_sent_from_a_compact_record(
        fleet: Fleet, connect: Callable[..., openai.OpenAI], redis_server: RedisServer) -> None:
    a, b = fleet
    stored = redis.Redis.from_url(redis_server.url)
    bodies = [{"input": "Tell me a story.", "include": ["message.output_text.logprobs"], "top_logprobs": 2},
              {"input": "Search the web for news.", "tools": [{"type": "web_search"}]},  # annotations, tool items
              {"model": "o4-mini", "input": "Think, then call f.", "reasoning": {"summary": "auto"},
               "include": ["reasoning.encrypted_content"], "tool_choice": "required",
               "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]}]
    for body in bodies:
        with httpx.stream("POST", f"{a.base_url}/responses", json={"model": "gpt-4o", **body, "stream": True},
                          timeout=60) as sent:
            frames = [frame for frame in sent.read().decode().split("\n\n") if frame.startswith("event:")]
        response_id = json.loads(frames[0].partition("data: ")[2])["response"]["id"]
        replayed = httpx.get(f"{b.base_url}/responses/{response_id}", params={"stream": "true"}, timeout=60).text
        assert [f for f in replayed.split("\n\n") if f.startswith("event:")] == frames  # byte for byte
        tail = list(connect(b).responses.retrieve(response_id, stream=True,  # type: ignore[call-overload]
                                                  starting_after=5))
        assert [e.sequence_number for e in tail] == list(range(6, len(frames)))

        key = f"llmsim:r:{response_id}"
        assert not stored.exists(f"{key}:e")  # no events: the deltas' compact form, a fraction of their size
        assert len(stored.hget(key, "replay") or b"") < sum(map(len, frames)) / 3


def test_a_json_answer_runs_one_redis_script_and_every_request_is_in_the_transcript(
        fleet: Fleet, connect: Callable[..., openai.OpenAI], redis_server: RedisServer) -> None:
    a, _ = fleet
    client = connect(a)
    ask(client)
    stats = redis.Redis.from_url(redis_server.url)

    def calls() -> int:
        return sum(int(value["calls"]) for name, value in stats.info("commandstats").items()
                   if name in ("cmdstat_evalsha", "cmdstat_eval"))

    before = calls()
    answer = ask(client)
    # Nothing could intervene in it (no fault, limit or scenario): its admission (with its scenario turn), its
    # stored response and its log entry, all in one script as the answer leaves (bench/stores.py counts round trips).
    assert calls() - before == 1
    assert connect(a).responses.retrieve(answer.id).output_text == answer.output_text
    ask(client, store=False)  # Redis learns that script (EVAL after EVALSHA's NOSCRIPT)
    before = calls()
    unstored = ask(client, store=False)  # nothing to store: its admission goes alone, as it leaves
    assert calls() - before == 1
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(unstored.id)
    entry = httpx.get(f"{a.url}/llmsim/admin/requests").json()["data"][-1]
    assert entry["status"] == 200 and entry["output_tokens"] == unstored.usage.output_tokens  # type: ignore[union-attr]
    assert entry["response_id"] == unstored.id
    before = calls()
    completion = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])
    assert calls() - before == 1  # a Chat Completions JSON answer too: admitted with its finished log entry
    entry = httpx.get(f"{a.url}/llmsim/admin/requests").json()["data"][-1]
    assert entry["endpoint"] == "chat.completions" and entry["status"] == 200
    assert entry["output_tokens"] == completion.usage.completion_tokens  # type: ignore[union-attr]

    refused = httpx.post(f"{a.base_url}/responses", json={"model": "gpt-4o", "input": "hi"},
                         headers={"X-LLMSim-Fault": "no-such-fault"})
    assert refused.status_code == 400
    transcript = httpx.get(f"{a.url}/llmsim/admin/scenarios/transcript").json()["data"]
    assert [entry["request"].get("input") for entry in transcript[-6:]] == ["hello"] * 4 + [None, "hi"]
    assert [entry["index"] for entry in transcript] == list(range(len(transcript)))


def test_an_answer_made_under_a_config_the_fleet_has_left_is_admitted_and_made_again(
        fleet: Fleet, connect: Callable[..., openai.OpenAI], redis_server: RedisServer) -> None:
    """A's workers admit a JSON answer from their own view of the fleet and record it with its writes; B changes
    the faults, then the scenario, which A learns only as it records: nothing of the first answer is kept (its
    log entry, transcript turn, stored response, conversation turn), and the request is made again under B's
    config, so `first: 1` fires on it and the scenario plays its turn."""
    a, b = fleet
    on_a = connect(a)
    stored = redis.Redis.from_url(redis_server.url)
    conversation = on_a.conversations.create(items=[{"type": "message", "role": "user", "content": "Hi"}])
    for _ in range(4):  # every worker of A has seen the fleet's config and scenario
        ask(on_a, conversation=conversation.id)
    responses = stored.zcard("llmsim:responses")
    config = httpx.put(f"{b.url}/llmsim/admin/faults", json={"faults": [{"kind": "server_error", "first": 1}]})
    assert config.status_code == 200
    with pytest.raises(openai.InternalServerError):
        ask(on_a, conversation=conversation.id)
    assert ask(on_a, conversation=conversation.id).status == "completed"
    counters = httpx.get(f"{b.url}/llmsim/admin/faults/counters").json()
    assert counters["faults"] == {"server_error": 1} and counters["requests"] == 6
    log = httpx.get(f"{b.url}/llmsim/admin/requests").json()["data"]
    assert [entry["index"] for entry in log] == list(range(1, 7))
    assert [entry["status"] for entry in log] == [200] * 4 + [500, 200]
    assert stored.zcard("llmsim:responses") == responses + 1  # the 500 stored nothing, the first answer neither
    assert len(on_a.conversations.items.list(conversation.id, limit=100).data) == 1 + 2 * 5

    loaded = httpx.put(f"{b.url}/llmsim/admin/scenarios", json={"turns": [{"text": "scripted"}]})
    assert loaded.status_code == 200
    assert ask(on_a).output_text == "scripted"
    transcript = httpx.get(f"{b.url}/llmsim/admin/scenarios/transcript").json()["data"]
    assert [entry["step"] for entry in transcript] == ["turns[0]"]  # one turn, in the scenario B loaded


def test_a_chat_completion_made_under_a_config_the_fleet_has_left_is_made_again(
        fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    """As for /responses: A's answer, admitted from its own view of the fleet, is refused as it is recorded, and
    made again under the `first: 1` fault B set meanwhile, which fires on it."""
    a, b = fleet
    on_a = connect(a)

    def chat() -> openai.types.chat.ChatCompletion:
        return on_a.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hello"}])

    for _ in range(4):  # every worker of A has seen the fleet's config
        assert chat().choices[0].message.content
    config = httpx.put(f"{b.url}/llmsim/admin/faults", json={"faults": [{"kind": "server_error", "first": 1}]})
    assert config.status_code == 200
    with pytest.raises(openai.InternalServerError):
        chat()
    assert chat().choices[0].finish_reason == "stop"
    counters = httpx.get(f"{b.url}/llmsim/admin/faults/counters").json()
    assert counters["faults"] == {"server_error": 1} and counters["requests"] == 6
    log = httpx.get(f"{b.url}/llmsim/admin/requests").json()["data"]
    assert [(entry["index"], entry["status"]) for entry in log] == list(enumerate([200] * 4 + [500, 200], start=1))


def test_background_made_on_a_is_followed_and_cancelled_from_b(
        fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    on_a, on_b = connect(a), connect(b)
    created = on_a.responses.create(model="slow-model", input="Tell me everything.", background=True,
                                    text={"verbosity": "high"}, extra_headers=PACED)
    followed = []
    with on_b.responses.retrieve(created.id, stream=True) as stream:  # type: ignore[call-overload]
        for event in stream:
            followed.append(event)
            if event.type == "response.output_text.delta" and len(followed) == 8:
                cancelled = on_b.responses.cancel(created.id)
                assert cancelled.status == "cancelled"
    assert followed[-1].type == "response.incomplete"  # a cancelled stream ends, its response cancelled
    assert followed[-1].response.status == "cancelled"
    assert "response.completed" not in {e.type for e in followed}
    assert [e.sequence_number for e in followed] == list(range(len(followed)))
    assert on_a.responses.retrieve(created.id).status == "cancelled"

    replay = list(on_a.responses.retrieve(created.id, stream=True, starting_after=5))  # type: ignore[call-overload]
    assert [e.sequence_number for e in replay] == list(range(6, len(followed)))


def test_background_stream_is_followed_across_servers_while_it_runs(
        fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    on_a, on_b = connect(a), connect(b)
    created = on_a.responses.create(model="slow-model", input="Hi", background=True, max_output_tokens=30,
                                    extra_headers=PACED)
    events = list(on_b.responses.retrieve(created.id, stream=True))  # type: ignore[call-overload]
    assert events[-1].type in ("response.completed", "response.incomplete")
    assert [e.sequence_number for e in events] == list(range(len(events)))
    done = wait_final(on_a, created.id)
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == done.output_text


def test_a_waiting_follower_blocks_instead_of_polling(fleet: Fleet, connect: Callable[..., openai.OpenAI],
                                                      redis_server: RedisServer) -> None:
    a, b = fleet
    created = connect(a).responses.create(model="quiet-model", input="Hi", background=True, max_output_tokens=16,
                                          extra_headers=PACED)
    events: list[str] = []
    follower = threading.Thread(target=lambda: events.extend(
        e.type for e in connect(b).responses.retrieve(created.id, stream=True)))  # type: ignore[call-overload]
    follower.start()
    until(lambda: "response.in_progress" in events)
    stats = redis.Redis.from_url(redis_server.url)
    before = stats.info("stats")["total_commands_processed"]
    time.sleep(1.5)  # no events meanwhile: a 20 ms poll would run ~75 reads (~225 commands)
    commands = stats.info("stats")["total_commands_processed"] - before
    follower.join()
    assert "response.output_text.delta" not in events[:events.index("response.in_progress") + 1]
    assert events[-1] in ("response.completed", "response.incomplete") and commands < 40


def test_scenario_turns_advance_once_per_request_fleet_wide(
        fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    a, b = fleet
    turns = [f"turn {i}" for i in range(6)]
    loaded = httpx.put(f"{a.url}/llmsim/admin/scenarios", json={"turns": [{"text": t} for t in turns],
                                                                 "on_exhausted": "error"})
    assert loaded.status_code == 200
    clients = [connect(a), connect(b)]
    assert [ask(clients[i % 2]).output_text for i in range(6)] == turns
    with pytest.raises(openai.BadRequestError, match="no reply left"):
        ask(clients[1])
    transcript = httpx.get(f"{b.url}/llmsim/admin/scenarios/transcript").json()["data"]
    assert [entry["step"] for entry in transcript] == [f"turns[{i}]" for i in range(6)] + [None]
    assert [entry["index"] for entry in transcript] == list(range(7))
    state = httpx.get(f"{a.url}/llmsim/admin/scenarios").json()
    assert state["requests"] == 7 and state["position"] == 6


def test_a_refused_request_takes_no_turn_fleet_wide(fleet: Fleet, connect: Callable[..., openai.OpenAI]) -> None:
    """Refused before generation (a fault, a rate limit), with or without a scenario loaded: recorded, marked, at
    the turn it did not take; a `times: 1` rule is left for the retry."""
    a, b = fleet
    transcript = f"{b.url}/llmsim/admin/scenarios/transcript"
    assert httpx.put(f"{a.url}/llmsim/admin/faults", json={"faults": [{"kind": "server_error", "first": 1}],
                                                          "rate_limits": {"rpm": 2}}).status_code == 200
    with pytest.raises(openai.InternalServerError):
        ask(connect(a))
    ask(connect(b))
    with pytest.raises(openai.RateLimitError):
        ask(connect(a))
    marks = [(e["index"], (e.get("refused") or {}).get("status")) for e in httpx.get(transcript).json()["data"]]
    assert marks == [(0, 500), (0, None), (1, 429)]

    assert httpx.put(f"{a.url}/llmsim/admin/faults", json={"faults": [{"kind": "rate_limit", "first": 1}]}
                     ).status_code == 200
    assert httpx.put(f"{a.url}/llmsim/admin/scenarios", json={"rules": [
        {"match": {"input_contains": "weather"}, "times": 1, "text": "scripted"}]}).status_code == 200
    with pytest.raises(openai.RateLimitError):
        ask(connect(a), "weather?")
    assert ask(connect(b), "weather?").output_text == "scripted"
    steps = [(e["step"], "refused" in e) for e in httpx.get(transcript).json()["data"]]
    assert steps == [(None, True), ("rules[0]", False)]


def test_a_server_starting_with_other_fault_flags_installs_them_the_same_flags_keep_the_schedule(
        fleet: Fleet, connect: Callable[..., openai.OpenAI], redis_server: RedisServer) -> None:
    a, b = fleet
    flags = ("--speed", "0", "--store", redis_server.url, "--fault", "server_error;first=2")
    with ServerProcess(*flags, startup_timeout=120):  # joins the fleet
        assert httpx.get(f"{a.url}/llmsim/admin/faults").json()["faults"][0]["first"] == 2
        with pytest.raises(openai.InternalServerError):
            ask(connect(a))
    with ServerProcess(*flags, startup_timeout=120) as restarted:  # a rolling restart: the schedule goes on
        with pytest.raises(openai.InternalServerError):
            ask(connect(restarted))
        assert ask(connect(b)).status == "completed"

    redis.Redis.from_url(redis_server.url).flushdb()  # a Redis that lost everything: the servers start over
    assert ask(connect(a)).status == "completed" and ask(connect(b)).status == "completed"
    assert httpx.get(f"{b.url}/llmsim/admin/faults/counters").json()["requests"] >= 1


def test_redis_lost_mid_load_gives_503s_then_recovers_losing_nothing(
        fleet: Fleet, connect: Callable[..., openai.OpenAI],
        redis_server: RedisServer) -> None:
    a, b = fleet
    clients = [connect(a), connect(b)]
    acknowledged: list[openai.types.responses.Response] = []
    errors: list[openai.APIStatusError] = []
    stop = threading.Event()

    def load(client: openai.OpenAI) -> None:
        while not stop.is_set():
            try:
                acknowledged.append(ask(client))
            except openai.APIStatusError as exc:
                errors.append(exc)
                time.sleep(0.01)

    threads = [threading.Thread(target=load, args=(client,)) for client in clients * 2]
    for thread in threads:
        thread.start()
    until(lambda: len(acknowledged) > 20)
    redis_server.stop()
    until(lambda: len(errors) > 4)
    assert httpx.get(f"{a.url}/llmsim/health").status_code == 503  # a load balancer's probe routes around it
    redis_server.start()
    served = len(acknowledged)
    until(lambda: len(acknowledged) > served + 20)
    stop.set()
    for thread in threads:
        thread.join()

    assert {error.status_code for error in errors} == {503}
    assert httpx.get(f"{b.url}/llmsim/health").json() == {"status": "ok"}
    assert all(error.body == {"message": "The server is overloaded or not ready yet.", "type": "server_error",
                              "param": None, "code": None} for error in errors)
    for i, response in enumerate(acknowledged):  # every response a client got is still there, on either server
        assert clients[i % 2].responses.retrieve(response.id).output_text == response.output_text


def test_scripts_survive_a_script_flush_an_error_reply_and_a_lost_connection(redis_url: str) -> None:
    client = redis_connect(redis_url)
    scripts = Scripts(client)
    add = scripts.register("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    fail = scripts.register("return redis.error_reply('boom')")
    assert scripts.run([(add, ["n"], [2]), (add, ["n"], [3])]) == [2, 5]  # one round trip
    client.script_flush()  # as after a restart: EVALSHA finds nothing, the call runs once from its text
    assert add(keys=["n"], args=[1]) == 6
    with pytest.raises(redis.exceptions.ResponseError, match="boom"):
        scripts.run([(fail, [], []), (add, ["n"], [1])])
    assert client.get("n") == b"7"  # the call after the error ran, and its reply was read: the connection is in step
    assert add(keys=["n"], args=[0]) == 7
    ours = [c for c in client.client_list() if c["db"] == "1" and c["cmd"] in ("evalsha", "eval")]
    assert len(ours) == 1  # every call went over one connection
    client.client_kill(ours[0]["addr"])  # Redis drops it, as when it restarts
    with pytest.raises(redis.exceptions.ConnectionError):
        add(keys=["n"], args=[1])
    assert add(keys=["n"], args=[1]) == 8  # on a new connection; the lost call never ran


def test_held_writes_go_only_where_the_guard_sent_with_them_lets_them(redis_url: str) -> None:
    client = redis_connect(redis_url)
    batch = Batch(Scripts(client))
    check = batch.scripts.register("if redis.call('GET', KEYS[1]) == ARGV[1] then return {'ok', 7} end "
                                   "return {'stale'}")
    add = batch.scripts.register("return redis.call('INCRBY', KEYS[1], ARGV[1])")
    client.set("gen", "1")
    replies: list[object] = []

    def guard(gen: str) -> Guard:
        return Guard(check, ["gen"], lambda: [gen], lambda reply: not replies.append(reply) and reply[0] == b"ok")

    batch.hold(defer=True)
    assert batch.deferrable()
    batch.defer(guard("0"))
    batch.write(add, ["n"], [5])
    assert not batch.commit() and replies[-1] == [b"stale"]  # refused: nothing it carried was written
    assert client.get("n") is None and batch.holding() and not batch.deferrable()  # the retry admits the usual way
    batch.write(add, ["n"], [2])
    batch.release()
    assert client.get("n") == b"2"

    batch.hold(defer=True)
    batch.defer(guard("1"))
    batch.write(add, ["n"], [3])
    batch.write(add, ["n"], [4])
    assert batch.commit() and replies[-1] == [b"ok", 7] and client.get("n") == b"9"
    batch.release()
    assert client.get("n") == b"9"  # sent once

    batch.hold(defer=True)  # a request that failed before its commit: sent as it is released, writes and all
    batch.defer(guard("1"))
    batch.write(add, ["n"], [1])
    batch.release()
    assert client.get("n") == b"10" and not batch.holding()


def test_store_limits_expiry_and_unfinished_responses(redis_url: str) -> None:
    stores = open_stores(redis_url, 3, 0)
    running = StoredResponse({"id": "resp_run", "status": "in_progress", "output": []}, [])
    stores.responses.put(running)
    for i in range(5):
        stores.responses.put(StoredResponse({"id": f"resp_{i}", "status": "completed", "output": [
            {"id": f"msg_{i}", "type": "message"}]}, [{"id": f"in_{i}", "type": "message"}]))
    assert len(stores.responses) == 3
    assert stores.responses.get("resp_run") is not None  # unfinished: never evicted
    assert stores.responses.get("resp_2") is None and stores.responses.get("resp_4") is not None
    assert stores.responses.find_item("msg_4") == {"id": "msg_4", "type": "message"}
    assert stores.responses.find_item("in_4") == {"id": "in_4", "type": "message"}
    assert stores.responses.find_item("in_4", owner="") == {"id": "in_4", "type": "message"}  # the shared scope
    assert stores.responses.find_item("in_4", owner="sk-other") is None  # another API key's
    assert stores.responses.find_item("msg_1") is None  # evicted with its response

    assert stores.responses.append("resp_run", [("a", "{}")], {"id": "resp_run", "status": "in_progress",
                                                               "output": []})
    assert stores.responses.cancel("resp_run") is not None
    assert not stores.responses.append("resp_run", [("b", "{}")])  # the worker learns it must stop
    assert stores.responses.append("resp_run", [("b", "{}")], {"id": "resp_run", "status": "cancelled",
                                                               "output": []}, force=True)
    assert stores.responses.tail("resp_run", -1) == ("cancelled", [("a", "{}"), ("b", "{}")])

    short = open_stores(redis_url, 10, 0.3)
    short.responses.put(StoredResponse({"id": "resp_short", "status": "completed", "output": []}, []))
    short.conversations.create(StoredConversation("conv_short", {"k": "v"}), [{"id": "item_1"}])
    assert short.responses.get("resp_short") is not None and short.conversations.items("conv_short")
    time.sleep(0.4)
    assert short.responses.get("resp_short") is None and short.conversations.get("conv_short") is None
    assert len(short.responses) == 0

    # Open, their heartbeats beat every 2 s; closed, they stop: none beats on (and warns) once Redis is gone.
    alive, control = stores.heartbeat.key(stores.heartbeat.worker), redis.Redis.from_url(redis_url)
    control.delete(alive)
    until(lambda: control.exists(alive), timeout=5)
    assert [t.name for t in threading.enumerate()].count("llmsim-heartbeat") >= 2
    stores.close()
    short.close()
    until(lambda: "llmsim-heartbeat" not in [t.name for t in threading.enumerate()], timeout=5)


def test_an_unreachable_redis_stops_start_up_with_a_message() -> None:
    url = f"redis://:secret@127.0.0.1:{free_port()}/0"
    result = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--store", url], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2
    assert "--store: cannot use Redis at 127.0.0.1:" in result.stderr and "secret" not in result.stderr


def test_a_fleet_on_a_redis_that_takes_only_tls_and_a_password(connect: Callable[..., openai.OpenAI]) -> None:
    """`rediss://` and a password in the URL: every connection's handshake applies both (a worker's scripts then
    go over the TLS socket's own calls, llmsim/runtime/redis_link.py, not the plain socket's pipe). Without the
    password, or without TLS, start-up stops with a message that does not show the password."""
    with RedisServer(fsync="everysec", password="pw-4b1d", tls=True) as guarded:
        assert guarded.url.startswith("rediss://:pw-4b1d@")
        servers = [ServerProcess("--speed", "0", "--store", guarded.url, "--workers", "2", startup_timeout=120)
                   for _ in range(2)]
        with ThreadPoolExecutor(2) as pool, contextlib.ExitStack() as started:
            for server in servers:
                started.callback(server.stop)
            list(pool.map(ServerProcess.start, servers))
            a, b = (connect(server) for server in servers)
            first = ask(a, "remember the tls fleet")
            second = ask(b, "and then?", previous_response_id=first.id)
            assert b.responses.retrieve(first.id).output_text == first.output_text
            with b.responses.stream(model="gpt-4o", input="stream it", previous_response_id=second.id) as stream:
                streamed = stream.get_final_response()
            assert a.responses.retrieve(streamed.id).output_text == streamed.output_text
            assert redis.Redis.from_url(guarded.url).exists(f"llmsim:r:{streamed.id}") == 1
            for server in servers:
                assert "Warning" not in server.log() and "Traceback" not in server.log(), server.log()
        for url in (guarded.url.replace("pw-4b1d", "not-it-7e"), guarded.url.replace("rediss://", "redis://")):
            result = subprocess.run([sys.executable, "-m", "llmsim", "serve", "--store", url], capture_output=True,
                                    text=True, timeout=120)
            assert result.returncode == 2 and "--store: cannot use Redis at 127.0.0.1:" in result.stderr
            assert "not-it-7e" not in result.stderr and "pw-4b1d" not in result.stderr


def test_each_wait_on_redis_has_the_whole_socket_timeout_and_a_hung_redis_gives_503s_then_recovers(
        redis_server: RedisServer, connect: Callable[..., openai.OpenAI]) -> None:
    """A worker's round trip waits for Redis' reply under the URL's `socket_timeout` (llmsim/runtime/redis_pipe.py):
    each wait gets all of it, however long its connection has waited before; a Redis that stops answering gives a
    503 once it runs out, and the next request after Redis answers again is served."""
    url = redis_server.url.rsplit("/", 1)[0] + "/2?socket_timeout=0.5"
    control = redis.Redis.from_url(redis_server.url)
    with ServerProcess("--speed", "0", "--store", url, startup_timeout=120) as server:
        client = connect(server)
        ask(client)
        for _ in range(5):  # 5 x 0.2 s of waiting on one connection: more than its timeout, never all at once
            control.execute_command("CLIENT", "PAUSE", 200, "WRITE")
            assert ask(client).status == "completed"
        control.execute_command("CLIENT", "PAUSE", 3000, "WRITE")
        started = time.monotonic()
        with pytest.raises(openai.InternalServerError) as caught:
            ask(client)
        assert caught.value.status_code == 503 and time.monotonic() - started < 2.5
        assert caught.value.body == {"message": "The server is overloaded or not ready yet.", "type": "server_error",
                                     "param": None, "code": None}
        control.execute_command("CLIENT", "UNPAUSE")
        assert ask(client).status == "completed"
