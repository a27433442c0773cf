"""Issue 46, found in the field: headers that echo a client's text, a 401's headers, the transcript's owners."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from llmsim.testing import RedisServer, ServerProcess

ROUTES = [("/responses", {"model": "gpt-4o", "input": "hi"}),
          ("/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}),
          ("/responses/input_tokens", {"model": "gpt-4o", "input": "hi"})]


@pytest.mark.parametrize(("path", "body"), ROUTES, ids=[path for path, _ in ROUTES])
@pytest.mark.parametrize("extra", [{"service_tier": "a\nb"}, {"service_tier": "a\r\nSet-Cookie: x=1"},
                                   {"fo\ro": 1}, {"b\u00e9\u2028": 1}], ids=["lf", "crlf", "cr-name", "unicode"])
def test_a_warning_that_echoes_cr_or_lf_is_encoded_not_a_500(server: ServerProcess, path: str, body: dict[str, Any],
                                                             extra: dict[str, Any]) -> None:
    answer = httpx.post(f"{server.base_url}{path}", json={**body, **extra}, timeout=30)
    assert answer.status_code == 200, answer.text
    warning = answer.headers["x-llmsim-warnings"]
    assert warning.isascii() and "\r" not in warning and "\n" not in warning
    assert "set-cookie" not in answer.headers
    (name, value), = extra.items()
    echoed = value if name == "service_tier" and path == "/responses" else name  # (the others: a name they lack)
    assert echoed.encode("unicode_escape").decode() in warning  # as Python writes it: a\nb, b\xe9\u2028


FUNCTION = {"type": "function", "name": "lookup", "description": "Find it.", "parameters": {"type": "object"}}
SHAPES = [
    ({"tools": [{"type": "namespace", "name": "crm", "description": "CRM", "tools": [{**FUNCTION, "name": 5}]}]},
     "tools[0].tools[0].name"),
    ({"tools": [{"type": "namespace", "name": "crm", "description": "CRM",
                 "tools": [{**FUNCTION, "description": 5}]}]}, "tools[0].tools[0].description"),
    ({"tools": [{"type": "namespace", "name": 5, "description": "CRM", "tools": [FUNCTION]}]}, "tools[0].name"),
    ({"input": [{"type": "additional_tools", "tools": [{**FUNCTION, "name": 5}]},
                {"role": "user", "content": "Look it up."}]}, "input[0].tools[0].name"),
    ({"input": [{"type": "additional_tools", "tools": [{**FUNCTION, "description": ["x"]}]},
                {"role": "user", "content": "Look it up."}]}, "input[0].tools[0].description"),
]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize(("extra", "param"), SHAPES, ids=[param for _, param in SHAPES])
def test_a_wrong_typed_member_of_a_namespace_or_additional_tools_is_a_400(
        server: ServerProcess, extra: dict[str, Any], param: str, stream: bool) -> None:
    body = {"model": "gpt-4o", "input": "Look it up.", **extra, "stream": stream}
    answer = httpx.post(f"{server.base_url}/responses", json=body, timeout=30)
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, "invalid_type", "invalid_request_error")


def test_a_401_has_its_request_id_and_processing_time(shared_server: Callable[..., ServerProcess]) -> None:
    """The key check ran before the hook that notes the request's arrival: the 401 had an empty id and the
    machine's uptime (perf_counter() - 0) as its processing time."""
    server = shared_server("--api-key", "sk-right")
    for path in ("/openai/v1/responses", "/v1/chat/completions", "/llmsim/admin/faults/reset"):
        answer = httpx.post(f"{server.url}{path}", json={"model": "gpt-4o", "input": "hi"},
                            headers={"Authorization": "Bearer sk-wrong"}, timeout=30)
        assert answer.status_code == 401, answer.text
        assert answer.headers["x-request-id"].startswith("req_") and len(answer.headers["x-request-id"]) > 10
        assert 0 <= int(answer.headers["openai-processing-ms"]) < 5000
    ids = {httpx.get(f"{server.base_url}/models", timeout=30).headers["x-request-id"] for _ in range(3)}
    assert len(ids) == 3


ALPHA, BRAVO = "sk-alpha-000000001", "sk-bravo-000000002"


def _transcript(server: ServerProcess, key: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{server.url}/llmsim/admin/scenarios/transcript", headers={"Authorization": f"Bearer {key}"},
                       timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["data"]


def _send(server: ServerProcess, key: str, text: str, **extra: Any) -> None:
    answer = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": text, **extra},
                        headers={"Authorization": f"Bearer {key}"}, timeout=30)
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("store", ["memory", "redis"])
def test_the_transcript_shows_a_key_its_own_and_the_admin_all_but_unstored_bodies(
        shared_server: Callable[..., ServerProcess], redis_url: Callable[[], str], store: str) -> None:
    """Issue 46, item 2: one key read another's prompts (store: false ones too) through the transcript."""
    flags = ("--api-key", f"{ALPHA},{BRAVO}", *(("--store", redis_url()) if store == "redis" else ()))
    keyed = shared_server(*flags)
    _send(keyed, ALPHA, "alpha's secret", store=False)
    _send(keyed, BRAVO, "bravo's own")
    alpha, bravo = _transcript(keyed, ALPHA), _transcript(keyed, BRAVO)
    assert [e["request"]["input"] for e in alpha] == ["alpha's secret"]  # its own, store: false or not
    assert [e["request"]["input"] for e in bravo] == ["bravo's own"]
    assert alpha[0]["owner"] and bravo[0]["owner"] and alpha[0]["owner"] != bravo[0]["owner"]

    admin = shared_server(*flags, "--admin-key", "admin-secret")
    httpx.post(f"{admin.url}/llmsim/admin/scenarios/reset", headers={"Authorization": "Bearer admin-secret"},
               timeout=30).raise_for_status()
    _send(admin, ALPHA, "alpha's secret", store=False)
    _send(admin, BRAVO, "bravo's own")
    seen = _transcript(admin, "admin-secret")
    assert [e["request"] and e["request"]["input"] for e in seen] == [None, "bravo's own"]  # all, but not unstored
    assert [e["owner"] for e in seen] == [alpha[0]["owner"], bravo[0]["owner"]]
    denied = httpx.get(f"{admin.url}/llmsim/admin/scenarios/transcript", headers={"Authorization": f"Bearer {BRAVO}"})
    assert denied.status_code == 401  # with an admin key, an API key is no admin credential


@pytest.fixture(scope="module")
def redis_url() -> Iterator[Callable[[], str]]:
    """A real redis-server for the module, started when a test first asks for it."""
    started: list[RedisServer] = []

    def url() -> str:
        if not started:
            started.append(RedisServer().start())
        return started[0].url

    yield url
    for redis in started:
        redis.stop()
