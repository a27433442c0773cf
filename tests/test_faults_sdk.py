"""Fault injection through the official openai SDK against a real server: errors, retries, timeouts, streams."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest

from llmsim.chaos.rules import ALIASES
from llmsim.testing import ServerProcess

FAULT = "X-LLMSim-Fault"


@pytest.fixture(scope="module")
def chaos_server(shared_server: Callable[..., ServerProcess]) -> ServerProcess:
    return shared_server("--seed", "11")


@pytest.fixture
def admin(chaos_server: ServerProcess) -> Callable[..., Any]:
    """Calls the admin API; each test starts from no rules and zeroed counters."""
    def call(method: str, path: str, **kwargs: Any) -> Any:
        response = httpx.request(method, f"{chaos_server.url}/llmsim/admin{path}", **kwargs)
        response.raise_for_status()
        return response.json()

    call("PUT", "/faults", json={})
    call("POST", "/faults/reset")
    return call


def ask(client: openai.OpenAI, fault: str | None = None, **fields: Any) -> Any:
    headers = {**fields.pop("extra_headers", {}), **({FAULT: fault} if fault else {})}
    return client.responses.create(model=fields.pop("model", "gpt-4o"), input=fields.pop("input", "hi"),
                                   extra_headers=headers, **fields)


@pytest.fixture
def client(chaos_server: ServerProcess, sdk_client: Callable[..., openai.OpenAI]) -> openai.OpenAI:
    return sdk_client(chaos_server)


@pytest.fixture
def retry_waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The seconds the SDK chose to sleep between attempts (it still sleeps them): the test's own thread's sleeps,
    not those of the server serving in this process."""
    waits: list[float] = []
    real_sleep = time.sleep
    test = threading.get_ident()

    def sleep(seconds: float) -> None:
        if threading.get_ident() == test:
            waits.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(openai._base_client.time, "sleep", sleep)
    return waits


# --- HTTP errors as the SDK raises them ------------------------------------------------------------------


@pytest.mark.parametrize("fault, error, status, code", [
    ("429", openai.RateLimitError, 429, "rate_limit_exceeded"),
    ("insufficient_quota", openai.RateLimitError, 429, "insufficient_quota"),
    ("500", openai.InternalServerError, 500, None),
    ("502", openai.InternalServerError, 502, None),
    ("503", openai.InternalServerError, 503, None),
    ("slow_down", openai.InternalServerError, 503, "slow_down"),
    ("504", openai.InternalServerError, 504, None),
    ("context_length_exceeded", openai.BadRequestError, 400, "context_length_exceeded"),
    ("401", openai.AuthenticationError, 401, "invalid_api_key"),
    ("403", openai.PermissionDeniedError, 403, "unsupported_country_region_territory"),
])
def test_forced_http_faults_raise_the_sdk_error(client: openai.OpenAI, admin: Callable[..., Any], fault: str,
                                                error: type[openai.APIStatusError], status: int,
                                                code: str | None) -> None:
    with pytest.raises(error) as caught:
        ask(client, fault)
    assert caught.value.status_code == status
    assert caught.value.code == code
    body = caught.value.response.json()["error"]
    assert set(body) == {"message", "type", "param", "code"} and body["message"]
    [entry] = admin("GET", "/requests")["data"]
    assert entry["fault"] == ALIASES.get(fault, fault)
    assert entry["rule"] == "header" and entry["status"] == status


def test_the_request_log_names_the_response_of_a_json_answer_and_of_a_stream(
        client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    answer = ask(client)
    with client.responses.stream(model="gpt-4o", input="hi") as stream:
        streamed = stream.get_final_response()
    log = admin("GET", "/requests")["data"]
    assert [entry["response_id"] for entry in log] == [answer.id, streamed.id]
    assert [entry["stream"] for entry in log] == [False, True]


def test_injected_429_carries_retry_and_ratelimit_headers(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    with pytest.raises(openai.RateLimitError) as caught:
        ask(client, "429;retry_after=0.25")
    headers = caught.value.response.headers
    assert headers["retry-after-ms"] == "250" and headers["retry-after"] == "1"
    assert headers["x-ratelimit-remaining-requests"] == "0"
    assert headers["x-ratelimit-reset-requests"] == "250ms"
    for name in ("limit-requests", "limit-tokens", "remaining-tokens", "reset-tokens"):
        assert headers[f"x-ratelimit-{name}"]
    assert caught.value.body["type"] == "requests"  # type: ignore[index]
    assert "Please try again in 250ms" in caught.value.message


def test_a_bad_fault_header_is_a_400(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        ask(client, "teapot")
    assert caught.value.body["param"] == FAULT  # type: ignore[index]
    with pytest.raises(openai.BadRequestError):
        ask(client, "500;after_events=3")  # a trigger only stream faults have


# --- the SDK's retries --------------------------------------------------------------------------------------


def test_sdk_retries_recover_from_scheduled_429s_and_honour_retry_after(
        chaos_server: ServerProcess, admin: Callable[..., Any],
        sdk_client: Callable[..., openai.OpenAI], retry_waits: list[float]) -> None:
    admin("PUT", "/faults", json={"faults": [{"kind": "rate_limit", "first": 2, "retry_after": 0.2}]})
    response = ask(sdk_client(chaos_server, max_retries=2))
    assert response.status == "completed"
    assert retry_waits == [0.2, 0.2]  # from retry-after-ms, not the SDK's own backoff
    requests = admin("GET", "/requests")["data"]
    assert [r["fault"] for r in requests] == ["rate_limit", "rate_limit", None]
    assert [r["status"] for r in requests] == [429, 429, 200]
    arrivals = [r["time"] for r in requests]
    assert all(later - earlier >= 0.2 for earlier, later in itertools.pairwise(arrivals))
    assert admin("GET", "/faults/counters")["faults"] == {"rate_limit": 2}


def test_sdk_retries_recover_from_5xx(chaos_server: ServerProcess, admin: Callable[..., Any],
                                      sdk_client: Callable[..., openai.OpenAI], retry_waits: list[float]) -> None:
    admin("PUT", "/faults", json={"faults": [
        {"kind": "server_error", "requests": [1], "retry_after": 0.1},
        {"kind": "overloaded", "requests": [2], "retry_after": 0.1},
        {"kind": "bad_gateway", "requests": [3], "retry_after": 0.1},
    ]})
    response = ask(sdk_client(chaos_server, max_retries=3))
    assert response.status == "completed"
    assert retry_waits == [0.1, 0.1, 0.1]
    assert [r["status"] for r in admin("GET", "/requests")["data"]] == [500, 503, 502, 200]


def test_retries_run_out_and_the_error_surfaces(chaos_server: ServerProcess, admin: Callable[..., Any],
                                                sdk_client: Callable[..., openai.OpenAI],
                                                retry_waits: list[float]) -> None:
    admin("PUT", "/faults", json={"faults": [{"kind": "504", "retry_after": 0.05}]})
    with pytest.raises(openai.InternalServerError) as caught:
        ask(sdk_client(chaos_server, max_retries=2))
    assert caught.value.status_code == 504
    assert len(admin("GET", "/requests")["data"]) == 3 and retry_waits == [0.05, 0.05]


# --- timeouts -----------------------------------------------------------------------------------------------


def test_a_hang_longer_than_the_client_timeout_is_an_api_timeout(
        chaos_server: ServerProcess, admin: Callable[..., Any], sdk_client: Callable[..., openai.OpenAI]) -> None:
    client = sdk_client(chaos_server, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        ask(client, "timeout;seconds=30")
    with pytest.raises(openai.APITimeoutError):
        ask(client, "timeout")  # until the client gives up
    assert ask(client).status == "completed"  # the hung requests hold no worker hostage
    assert admin("GET", "/faults/counters")["faults"] == {"timeout": 2}


def test_a_short_hang_then_the_response(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    started = time.monotonic()
    assert ask(client, "timeout;seconds=0.3").status == "completed"
    assert time.monotonic() - started >= 0.3  # it did wait before the first byte


# --- mid-stream faults --------------------------------------------------------------------------------------


def stream_types(client: openai.OpenAI, fault: str, **fields: Any) -> tuple[list[Any], BaseException | None]:
    events: list[Any] = []
    try:
        events.extend(ask(client, fault, stream=True, **fields))
    except Exception as exc:  # noqa: BLE001 - the test inspects what the SDK raised
        return events, exc
    return events, None


def test_a_dropped_stream_raises_in_the_sdk_after_n_events(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    events, error = stream_types(client, "stream_drop;after_events=5")
    assert isinstance(error, openai.APIConnectionError)
    assert len(events) == 5 and [e.sequence_number for e in events] == [0, 1, 2, 3, 4]
    assert admin("GET", "/faults/counters")["faults"] == {"stream_drop": 1}


def test_a_malformed_frame_raises_in_the_sdk(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    events, error = stream_types(client, "stream_malformed;after_events=4")
    assert isinstance(error, json.JSONDecodeError)
    assert len(events) == 4


def test_stream_failed_ends_with_response_failed(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    events, error = stream_types(client, "stream_failed;after_events=6")
    assert error is None
    assert events[-1].type == "response.failed"
    assert events[-1].response.status == "failed" and events[-1].response.error.code == "server_error"
    numbers = [e.sequence_number for e in events]
    assert numbers == list(range(len(numbers)))
    assert not any(e.type == "response.completed" for e in events)
    helper = client.responses.stream(model="gpt-4o", input="hi", extra_headers={FAULT: "stream_failed;after_events=6"})
    with pytest.raises(RuntimeError), helper as stream:  # the stream helper has no completed response to give
        stream.get_final_response()


def test_stream_error_event_ends_the_stream(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    events, error = stream_types(client, "stream_error;after_events=3")
    assert error is None
    assert [e.type for e in events][-1] == "error" and len(events) == 4
    assert events[-1].code == "server_error" and events[-1].sequence_number == 3


def test_after_tokens_cuts_the_text_short(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    full = ask(client, input="tell me a story", extra_headers={"X-LLMSim-Seed": "5"}).output_text
    events, error = stream_types(client, "stream_drop;after_tokens=10", input="tell me a story",
                                 extra_headers={"X-LLMSim-Seed": "5"})
    assert isinstance(error, openai.APIConnectionError)
    partial = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert partial and full.startswith(partial) and len(partial) < len(full)


def test_a_fault_hits_a_stream_shorter_than_its_trigger(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    events, error = stream_types(client, "stream_failed;after_events=100000")
    assert error is None and events[-1].type == "response.failed"


def test_non_streaming_requests_see_stream_faults_as_errors(client: openai.OpenAI,
                                                            admin: Callable[..., Any]) -> None:
    with pytest.raises(openai.InternalServerError):
        ask(client, "stream_failed")
    with pytest.raises(openai.InternalServerError):
        ask(client, "stream_error")
    with pytest.raises(openai.APIConnectionError):
        ask(client, "stream_drop")


def test_slow_stream_and_latency_spike_still_complete(client: openai.OpenAI, admin: Callable[..., Any]) -> None:
    for fault, paused in (("slow_stream;seconds=0.005;after_events=3", lambda n: 0.005 * (n - 3)),
                          ("latency_spike;seconds=0.2;after_events=3", lambda n: 0.2)):
        started = time.monotonic()
        events, error = stream_types(client, fault)
        assert error is None and events[-1].type == "response.completed"
        assert time.monotonic() - started >= paused(len(events))  # the pauses happened
    assert admin("GET", "/faults/counters")["faults"] == {"slow_stream": 1, "latency_spike": 1}
