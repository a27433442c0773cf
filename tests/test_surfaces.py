"""The surface contract (llmsim/surface.py) holds for every registered surface: its errors in its own envelope, even
on a route it does not have under its own prefix; its overload error its own; its routes found and run for a URL
without HTTP, on the same road as a request (what a batch runner needs)."""

from __future__ import annotations

from collections.abc import Callable

import anthropic
import httpx
import pytest

from llmsim import orchestrate
from llmsim.backends import load_backend, load_models
from llmsim.config import Settings
from llmsim.messages.surface import MESSAGES
from llmsim.pipeline import Pipeline
from llmsim.request import ApiRequest
from llmsim.responses.surface import RESPONSES
from llmsim.store import MemoryStore
from llmsim.surfaces import SURFACES
from llmsim.testing import ServerProcess

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "Say hello."}]}


def test_an_unknown_route_under_anthropics_own_prefix_is_anthropics_404(server: ServerProcess) -> None:
    client = anthropic.Anthropic(base_url=f"{server.url}/anthropic", api_key="sk-ant-test", max_retries=0)
    with pytest.raises(anthropic.NotFoundError) as raised:
        client.get("/v1/no-such-route", cast_to=object)
    assert raised.value.body["type"] == "error"  # type: ignore[index]
    assert raised.value.body["error"]["type"] == "not_found_error"  # type: ignore[index]
    assert raised.value.response.headers["request-id"]
    wrong = httpx.get(f"{server.url}/anthropic/v1/messages")
    assert wrong.status_code == 405 and wrong.json()["error"]["type"] == "invalid_request_error"
    assert "POST" in wrong.headers["allow"]
    openai_side = httpx.post(f"{server.url}/v1/no-such-route", json={})  # /v1 is shared: OpenAI's words there
    assert openai_side.status_code == 404 and openai_side.json()["error"]["message"].startswith("Invalid URL")


def test_each_surfaces_overload_error_is_its_own() -> None:
    body, status = RESPONSES.envelope(RESPONSES.overloaded(retry_after=2), "req_1")
    assert status == 503 and body["error"]["type"] == "server_error"
    assert RESPONSES.overloaded(retry_after=2).headers == {"retry-after": "2"}
    body, status = MESSAGES.envelope(MESSAGES.overloaded(), "req_1")
    assert status == 529 and body == {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
                                      "request_id": "req_1"}


def test_every_surface_has_one_name_and_one_path() -> None:
    names = [surface.name for surface in SURFACES]
    paths = [surface.path for surface in SURFACES]
    assert len(set(names)) == len(names) == len(set(paths)) == len(SURFACES) >= 3


def test_a_route_is_found_and_run_for_a_url_without_http(start_server: Callable[..., ServerProcess]) -> None:
    """A batch line's `url` and body run on the road its HTTP request would: the same answer. (A pipeline of its
    own, not an app's: an app in this process would leave its chart-history thread sleeping in later tests.)"""
    settings = Settings(speed=0.0, seed=7)
    backend = load_backend(settings)
    pipeline = Pipeline(load_models(backend, settings), backend, MemoryStore(), seed=7)
    routed = orchestrate.route_for("POST", "/v1/chat/completions")
    assert routed is not None and routed.surface.name == "chat.completions"
    answer = orchestrate.run(pipeline, routed.surface, routed.route, ApiRequest(dict(CHAT), params=routed.params))
    over_http = httpx.post(f"{start_server('--seed', '7').base_url}/chat/completions", json=CHAT, timeout=30).json()
    assert answer.body["choices"][0]["message"]["content"] == over_http["choices"][0]["message"]["content"] != ""
    counted = orchestrate.route_for("POST", "/anthropic/v1/messages/count_tokens")
    assert counted is not None and counted.surface is MESSAGES
    tokens = orchestrate.run(pipeline, counted.surface, counted.route, ApiRequest(
        {"model": "claude-sonnet-4-6", "messages": [{"role": "user", "content": "Count me."}]}))
    assert tokens.body["input_tokens"] > 0
    assert orchestrate.route_for("GET", "/v1/chat/completions") is None
    assert orchestrate.route_for("POST", "/v1/no-such-route") is None
