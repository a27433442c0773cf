"""Every bad input gets the OpenAI error envelope with the right status, and never costs stored data."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import openai
import pytest

from llmsim.surfaces import REFUSED
from llmsim.testing import ServerProcess


def assert_envelope(response: httpx.Response, status: int, code: str | None = None, param: str | None = None) -> dict:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    assert body["error"]["message"] and "Traceback" not in body["error"]["message"]
    if code is not None:
        assert body["error"]["code"] == code
    if param is not None:
        assert body["error"]["param"] == param
    return body["error"]


BAD_BODIES = [
    ({"input": "hi"}, "missing_required_parameter", "model"),
    ({"model": "gpt-4o", "input": "hi", "frequency_penalty": 1}, "unknown_parameter", "frequency_penalty"),
    ({"model": "gpt-4o", "input": [{"role": "user", "content": "x", "contnet": 1}]}, "unknown_parameter",
     "input[0].contnet"),
    ({"model": 4, "input": "hi"}, "invalid_type", "model"),
    ({"model": "gpt-4o", "input": 5}, "invalid_type", "input"),
    ({"model": "gpt-4o", "input": "hi", "temperature": "1"}, "invalid_type", "temperature"),
    ({"model": "gpt-4o", "input": "hi", "temperature": 2.5}, "decimal_above_max_value", "temperature"),
    ({"model": "gpt-4o", "input": "hi", "top_p": -0.1}, "decimal_below_min_value", "top_p"),
    ({"model": "gpt-4o", "input": "hi", "top_logprobs": 21}, "integer_above_max_value", "top_logprobs"),
    ({"model": "gpt-4o", "input": "hi", "max_output_tokens": 15}, "integer_below_min_value", "max_output_tokens"),
    ({"model": "gpt-4o", "input": "hi", "max_output_tokens": 16385}, "integer_above_max_value",
     "max_output_tokens"),
    ({"model": "gpt-4o", "input": "hi", "stream": "yes"}, "invalid_type", "stream"),
    ({"model": "gpt-4o", "input": [{"type": "bogus"}]}, "invalid_value", "input[0].type"),
    ({"model": "gpt-4o", "input": [{"role": "wizard", "content": "x"}]}, "invalid_value", "input[0].role"),
    ({"model": "gpt-4o", "input": [{"role": "user", "content": [{"type": "input_txt", "text": "x"}]}]},
     "invalid_value", "input[0].content[0].type"),
    ({"model": "gpt-4o", "input": [{"role": "user", "content": [{"type": "input_text"}]}]},
     "missing_required_parameter", "input[0].content[0].text"),
    ({"model": "gpt-4o", "input": [{"type": "function_call_output", "call_id": "c"}]},
     "missing_required_parameter", "input[0].output"),
    ({"model": "gpt-4o", "input": [{"type": "item_reference", "id": "msg_nowhere"}]}, None, "input"),
    ({"model": "gpt-4o", "input": "hi", "tools": [{"type": "function", "name": "bad name"}]}, "invalid_value",
     "tools[0].name"),
    ({"model": "gpt-4o", "input": "hi", "tools": [{"type": "teleport"}]}, "invalid_value", "tools[0].type"),
    ({"model": "gpt-4o", "input": "hi", "tool_choice": "sometimes"}, "invalid_value", "tool_choice"),
    ({"model": "gpt-4o", "input": "hi", "tool_choice": {"type": "function"}}, "missing_required_parameter",
     "tool_choice.name"),
    ({"model": "gpt-4o", "input": "hi", "text": {"format": {"type": "json_schema", "name": "x"}}},
     "missing_required_parameter", "text.format.schema"),
    ({"model": "gpt-4o", "input": "hi", "text": {"verbosity": "loud"}}, "invalid_value", "text.verbosity"),
    ({"model": "gpt-4o", "input": "hi", "include": ["everything"]}, "invalid_value", "include[0]"),
    ({"model": "gpt-4o", "input": "hi", "truncation": "sometimes"}, "invalid_value", "truncation"),
    ({"model": "gpt-4o", "input": "hi", "metadata": {"a": 1}}, "invalid_type", "metadata.a"),
    ({"model": "gpt-4o", "input": "hi", "metadata": {f"k{i}": "v" for i in range(17)}},
     "object_above_max_properties", "metadata"),
    ({"model": "gpt-4o", "input": "hi", "metadata": {"k" * 65: "v"}}, "string_above_max_length", "metadata"),
    ({"model": "gpt-4o", "input": "hi", "metadata": {"k": "v" * 513}}, "string_above_max_length", "metadata.k"),
    ({"model": "gpt-4o", "input": "hi", "previous_response_id": "resp_1", "conversation": "conv_1"},
     "mutually_exclusive_parameters", None),
    ({"model": "gpt-4", "input": "word " * 9000}, "context_length_exceeded", "input"),
]


STRICT = {"X-LLMSim-Strict-Params": "true"}  # the live API's 400 for unknown names and values too


@pytest.mark.parametrize(("body", "code", "param"), BAD_BODIES, ids=[str(i) for i in range(len(BAD_BODIES))])
def test_bad_request_bodies(server: ServerProcess, body: dict, code: str | None, param: str | None) -> None:
    status = 404 if param == "input" and code is None else 400
    assert_envelope(httpx.post(f"{server.base_url}/responses", json=body, headers=STRICT), status, code, param)


def test_the_sdk_surfaces_validation_errors(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:
        client.responses.create(model="gpt-4o", input="hi", extra_body={"bogus": True}, extra_headers=STRICT)
    assert error.value.body == {"message": "Unknown parameter: 'bogus'.", "type": "invalid_request_error",
                                "param": "bogus", "code": "unknown_parameter"}


# --- forward compatibility (llmsim/shared/compat.py) ------------------------------------------------

FORWARD = {
    "model": "gpt-4o", "service_tier": "hyperspeed", "brand_new_param": {"x": 1},
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi", "fresh_field": 1}], "badge": "x"}],
    "text": {"verbosity": "loud"}, "include": ["message.output_text.logprobs", "everything"],
}


def test_unknown_names_and_values_are_accepted_and_reported(server: ServerProcess) -> None:
    response = httpx.post(f"{server.base_url}/responses", json=FORWARD)
    assert response.status_code == 200, response.text
    warnings = response.headers["x-llmsim-warnings"].split("; ")
    assert sorted(warnings) == sorted([
        "unknown value 'hyperspeed' of 'service_tier'", "unknown parameter 'brand_new_param'",
        "unknown parameter 'input[0].content[0].fresh_field'", "unknown parameter 'input[0].badge'",
        "unknown value 'loud' of 'text.verbosity'", "unknown value 'everything' of 'include[1]'"])
    body = response.json()
    assert body["service_tier"] == "default" and body["text"]["verbosity"] == "medium"  # the defaults apply
    logged = httpx.get(f"{server.url}/llmsim/admin/requests").json()["data"]
    assert any(sorted(entry.get("warnings", [])) == sorted(warnings) for entry in logged)
    chat = httpx.post(f"{server.base_url}/chat/completions", json={
        "model": "gpt-4o", "messages": [{"role": "user", "content": "hi", "mood": "x"}], "service_tier": "warp"})
    assert chat.status_code == 200 and chat.headers["x-llmsim-warnings"] == (
        "unknown parameter 'messages[0].mood'; unknown value 'warp' of 'service_tier'")
    plain = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi"})
    assert "x-llmsim-warnings" not in plain.headers


def test_strict_params_give_the_live_400(server: ServerProcess) -> None:
    response = httpx.post(f"{server.base_url}/responses", json=FORWARD, headers=STRICT)
    assert assert_envelope(response, 400)["code"] in ("invalid_value", "unknown_parameter")
    unknown = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi", "nope": 1},
                         headers=STRICT)
    assert_envelope(unknown, 400, "unknown_parameter", "nope")


@pytest.mark.parametrize(("path", "body", "param"), [
    ("/responses", {"model": "gpt-4o", "input": "hi", "max_tokens": 5}, "max_tokens"),
    ("/responses", {"model": "gpt-4o", "input": "hi", "messages": []}, "messages"),
    ("/responses", {"model": "gpt-4o", "input": "hi", "response_format": {"type": "json_object"}}, "response_format"),
    ("/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "input": "hi"},
     "input"),
    ("/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}],
                           "max_output_tokens": 9}, "max_output_tokens"),
])
def test_names_wrong_on_an_endpoint_are_refused_always(server: ServerProcess, path: str, body: dict,
                                                        param: str) -> None:
    assert_envelope(httpx.post(f"{server.base_url}{path}", json=body), 400, "unknown_parameter", param)


def test_a_required_fields_unknown_value_is_its_own_error(server: ServerProcess) -> None:
    response = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": [
        {"role": "wizard", "content": "x"}]})
    assert_envelope(response, 400, "invalid_value", "input[0].role")


# The strict test and the body-limit one share a server (a start costs a core 1.5 s): the strict test's bodies are
# far under the limit, and the body-limit test's small request is a known model with known parameters.
STRICT_AND_LIMITED = ("--strict-params", "--strict-models", "--max-body-bytes", "2048")


def test_strict_params_flag_and_its_header(shared_server: Callable[..., ServerProcess]) -> None:
    strict = shared_server(*STRICT_AND_LIMITED)
    body = {"model": "gpt-4o", "input": "hi", "client_future": True}
    assert_envelope(httpx.post(f"{strict.base_url}/responses", json=body), 400, "unknown_parameter")
    lenient = httpx.post(f"{strict.base_url}/responses", json=body, headers={"X-LLMSim-Strict-Params": "false"})
    assert lenient.status_code == 200 and lenient.headers["x-llmsim-warnings"] == "unknown parameter 'client_future'"
    assert_envelope(httpx.post(f"{strict.base_url}/responses", json=body, headers={"X-LLMSim-Strict-Params": "maybe"}),
                    400, "invalid_value")
    # --strict-models: the live API's model_not_found; Chat Completions answers it with a 404 (finding 6)
    chat = httpx.post(f"{strict.base_url}/chat/completions", json={
        "model": "gpt-nope", "messages": [{"role": "user", "content": "hi"}]})
    assert_envelope(chat, 404, "model_not_found")
    assert_envelope(httpx.post(f"{strict.base_url}/responses", json={"model": "gpt-nope", "input": "hi"}), 400,
                    "model_not_found", "model")
    for known in ("gpt-6.2-sol", "gpt-5.5-pro", "o3-deep-research"):  # the live API's names, placed by family
        assert httpx.post(f"{strict.base_url}/responses", json={"model": known, "input": "hi"}).status_code == 200


# --- the live API's conformance (issue 32, finding 6) ---------------------------------------------------

def test_unknown_previous_response(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as error:  # 400 on the live API, not 404
        client.responses.create(model="gpt-4o", input="hi", previous_response_id="resp_doesnotexist")
    assert error.value.body["message"] == "Previous response with id 'resp_doesnotexist' not found."
    assert error.value.body["code"] == "previous_response_not_found"


@pytest.mark.parametrize("item_id", [[1], {"a": 1}])
def test_a_built_in_items_id_of_the_wrong_type_is_a_400(server: ServerProcess, item_id: object) -> None:
    body = {"model": "gpt-4o", "input": [{"type": "web_search_call", "id": item_id}]}
    assert_envelope(httpx.post(f"{server.base_url}/responses", json=body), 400, "invalid_type", "input[0].id")


CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
ACCEPTED = [  # false 400s before: each is a shape of the SDK's own types (3.57)
    ("/chat/completions", {**CHAT, "messages": [{"role": "user", "content": [
        {"type": "text", "text": "hi", "prompt_cache_breakpoint": {"mode": "explicit"}}]}]}),
    ("/chat/completions", {**CHAT, "tools": [{"type": "custom", "custom": {"name": "sql", "format": {
        "type": "grammar", "grammar": {"definition": "start: /SELECT .*/", "syntax": "lark"}}}}]}),
    ("/chat/completions", {**CHAT, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "original"}}]}]}),
    ("/responses", {"model": "gpt-4o", "input": "hi", "text": {"verbosity": None}}),
    ("/responses", {"model": "gpt-4o", "input": [
        {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": [
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": None}]}]}),
    ("/responses", {"model": "gpt-5.5", "input": "hi", "reasoning": {"effort": "max"}}),
    ("/responses", {"model": "gpt-4o", "input": "hi", "service_tier": "fast"}),
    ("/responses", {"model": "gpt-4o", "input": "hi", "service_tier": "ultrafast"}),
    ("/responses", {"model": "gpt-5", "input": "hi", "client_metadata": {"session_id": "s", "turn_id": "t"}}),
]


@pytest.mark.parametrize(("path", "body"), ACCEPTED, ids=[str(i) for i in range(len(ACCEPTED))])
def test_the_sdks_shapes_are_accepted_strictly(server: ServerProcess, path: str, body: dict) -> None:
    response = httpx.post(f"{server.base_url}{path}", json=body, headers=STRICT)
    assert response.status_code == 200, response.text
    assert "x-llmsim-warnings" not in response.headers


def test_chat_empty_tool_calls_is_a_400(server: ServerProcess) -> None:
    body = {**CHAT, "messages": [{"role": "user", "content": "hi"},
                                 {"role": "assistant", "content": "ok", "tool_calls": []},
                                 {"role": "user", "content": "again"}]}
    assert_envelope(httpx.post(f"{server.base_url}/chat/completions", json=body), 400, "empty_array",
                    "messages[1].tool_calls")


def test_an_incomplete_response_joins_its_conversation(client: openai.OpenAI) -> None:
    conversation = client.conversations.create()
    response = client.responses.create(model="gpt-4o", input="Tell me a long story.", max_output_tokens=16,
                                       conversation=conversation.id)
    assert response.status == "incomplete"
    items = client.conversations.items.list(conversation.id, order="asc").data
    assert [item.type for item in items] == ["message", "message"]
    assert items[1].id == response.output[0].id


def test_item_reference_resolves_from_history(client: openai.OpenAI) -> None:
    first = client.responses.create(model="gpt-4o", input="Remember this.")
    message_id = first.output[0].id
    second = client.responses.create(model="gpt-4o", previous_response_id=first.id, input=[
        {"type": "item_reference", "id": message_id}, {"role": "user", "content": "Again?"}])
    items = client.responses.input_items.list(second.id, order="asc")
    assert items.data[0].id == message_id and items.data[0].role == "assistant"


@pytest.mark.parametrize(("method", "path", "kwargs", "status", "code"), [
    ("POST", "/responses", {"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, None),
    ("POST", "/responses", {"content": b'"just a string"', "headers": {"content-type": "application/json"}}, 400,
     "invalid_type"),
    ("POST", "/responses", {"content": b"model=gpt-4o", "headers": {"content-type": "text/plain"}}, 415,
     "unsupported_content_type"),
    ("POST", "/responses", {"content": b"\xff\xfe", "headers": {"content-type": "application/json"}}, 400, None),
    ("PUT", "/responses", {}, 405, None),
    ("PATCH", "/responses/resp_1", {}, 405, None),
    ("GET", "/no/such/endpoint", {}, 404, None),
    ("GET", "/responses/resp_nope", {}, 404, None),
    ("GET", "/responses/resp_nope/input_items", {}, 404, None),
    ("DELETE", "/responses/resp_nope", {}, 404, None),
    ("GET", "/models/gpt-404", {}, 404, "model_not_found"),
])
def test_http_level_errors(server: ServerProcess, method: str, path: str, kwargs: dict, status: int,
                           code: str | None) -> None:
    assert_envelope(httpx.request(method, f"{server.base_url}{path}", **kwargs), status, code)


def test_query_parameters_are_validated(client: openai.OpenAI, server: ServerProcess) -> None:
    response = client.responses.create(model="gpt-4o", input="hi")
    base = f"{server.base_url}/responses/{response.id}"
    assert_envelope(httpx.get(f"{base}/input_items", params={"limit": 0}), 400, "invalid_value", "limit")
    assert_envelope(httpx.get(f"{base}/input_items", params={"limit": "ten"}), 400, "invalid_type", "limit")
    assert_envelope(httpx.get(f"{base}/input_items", params={"order": "up"}), 400, "invalid_value", "order")
    assert_envelope(httpx.get(f"{base}/input_items", params={"after": "msg_x"}), 404, None, "after")
    assert_envelope(httpx.get(base, params={"stream": "true", "starting_after": "x"}), 400, "invalid_type")


def test_oversized_body_gets_413(shared_server: Callable[..., ServerProcess]) -> None:
    server = shared_server(*STRICT_AND_LIMITED)
    body = {"model": "gpt-4o", "input": "x" * 4096}
    error = assert_envelope(httpx.post(f"{server.base_url}/responses", json=body), 413)
    assert "2048" in error["message"]
    assert httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "ok"}).status_code == 200


def test_api_key(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server("--api-key", "sk-right")
    good = openai.OpenAI(base_url=server.base_url, api_key="sk-right", max_retries=0)
    assert good.responses.create(model="gpt-4o", input="hi").status == "completed"
    assert good.models.list().data
    with pytest.raises(openai.AuthenticationError) as error:
        openai.OpenAI(base_url=server.base_url, api_key="sk-wrong-key", max_retries=0).responses.create(
            model="gpt-4o", input="hi")
    assert error.value.status_code == 401 and error.value.body["code"] == "invalid_api_key"
    assert "sk-right" not in error.value.body["message"]
    assert_envelope(httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi"}), 401,
                    "invalid_api_key")


def test_api_key_from_environment(start_server: Callable[..., ServerProcess]) -> None:
    server = start_server(env={"LLMSIM_API_KEY": "sk-env"})
    assert httpx.get(f"{server.base_url}/models").status_code == 401
    assert httpx.get(f"{server.base_url}/models", headers={"Authorization": "Bearer sk-env"}).status_code == 200


def test_bad_requests_never_lose_stored_data(client: openai.OpenAI, server: ServerProcess) -> None:
    kept = client.responses.create(model="gpt-4o", input="keep me")
    for body, _, _ in BAD_BODIES:
        httpx.post(f"{server.base_url}/responses", json={**body, "previous_response_id": kept.id}
                   if "previous_response_id" not in body else body)
    httpx.post(f"{server.base_url}/responses", content=b"{", headers={"content-type": "application/json"})
    httpx.delete(f"{server.base_url}/responses/resp_other")
    again = client.responses.retrieve(kept.id)
    assert again.output_text == kept.output_text
    assert [i.content[0].text for i in client.responses.input_items.list(kept.id)] == ["keep me"]


def test_the_refused_names_are_documented() -> None:
    """docs/compatibility.md lists every name each surface refuses (llmsim/surface.py's `refused`)."""
    page = (Path(__file__).resolve().parent.parent / "docs" / "compatibility.md").read_text()
    missing = [f"{endpoint}: {name}" for endpoint, names in REFUSED.items() for name in names
               if f"`{name}`" not in page]
    assert missing == []


@pytest.mark.parametrize("path", ["/responses/input_tokens", "/responses/compact"])
def test_the_other_responses_endpoints_are_forward_compatible_too(server: ServerProcess, path: str) -> None:
    body = {"model": "gpt-5", "input": "hi", "client_metadata": {"session_id": "s"}, "future_param": 1}
    answer = httpx.post(f"{server.base_url}{path}", json=body)
    assert answer.status_code == 200, answer.text
    assert answer.headers["x-llmsim-warnings"] == "unknown parameter 'future_param'"
    assert_envelope(httpx.post(f"{server.base_url}{path}", json=body, headers=STRICT), 400, "unknown_parameter",
                    "future_param")


def test_forgiving_is_bounded(server: ServerProcess) -> None:
    """More unknown values than are ever dropped from one body: the live 400, never a 500."""
    body = {"model": "gpt-4o", "input": "hi", "include": ["zz"] * 100, **{f"k{i}": i for i in range(100)}}
    assert_envelope(httpx.post(f"{server.base_url}/responses", json=body), 400, "invalid_value", "include[0]")
