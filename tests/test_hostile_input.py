"""Hostile input gets a 4xx in the OpenAI envelope (a WebSocket `error` event), never a 500, a hang, a dropped
connection or internal text; and the server goes on serving."""

from __future__ import annotations

import json
import socket
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from llmsim.testing import ServerProcess

MODEL = '"model":"gpt-4o"'
CHAT = '"messages":[{"role":"user","content":"hi"}]'
INTERNAL = ("Traceback", "recursion", "Recursion", "Error:", "File \"", "line ", "infinity", "time_t", "codec",
            "surrogates not allowed", "llmsim/")


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def nested_object(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def tool(parameters: str) -> str:
    return f'"tool_choice":"required","tools":[{{"type":"function","name":"f","parameters":{parameters}}}]'


def text_schema(schema: str) -> str:
    return f'"text":{{"format":{{"type":"json_schema","name":"s","schema":{schema}}}}}'


def chat_schema(schema: str) -> str:
    return f'"response_format":{{"type":"json_schema","json_schema":{{"name":"s","schema":{schema}}}}}'


SELF_REF = '{"type":"object","properties":{"a":{"$ref":"#/properties/a"}},"required":["a"]}'
REF_LOOP = ('{"type":"object","$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},'
            '"properties":{"x":{"$ref":"#/$defs/a"}}}')
NAN_DEFAULT = '{"type":"object","default":NaN}'
ROOT_REF = '{"$ref":"#"}'
SURROGATE_KEY = '{"type":"object","properties":{"\\ud800":{"type":"string"}}}'
HUGE_BOUND = '{"type":"object","properties":{"a":{"type":"integer","minimum":1e400}},"required":["a"]}'

# (name, path, JSON body as text: escapes such as \ud800 stay as the client sent them)
BODIES: list[tuple[str, str, str]] = [
    ("input nested 5,000 deep", "/responses", f'{{{MODEL},"input":{nested(5000)}}}'),
    ("input nested 100,000 deep", "/responses", f'{{{MODEL},"input":{nested(100_000)}}}'),
    ("metadata nested 150 deep", "/responses", f'{{{MODEL},"input":"hi","metadata":{nested_object(150)}}}'),
    ("tool parameters nested 600 deep", "/responses",
     f'{{{MODEL},"input":"hi",{tool(nested_object(600))}}}'),
    ("text schema nested 300 deep", "/responses",
     f'{{{MODEL},"input":"hi",{text_schema(nested_object(300))}}}'),
    ("chat messages nested 5,000 deep", "/chat/completions", f'{{{MODEL},"messages":{nested(5000)}}}'),
    ("conversation metadata nested 5,000 deep", "/conversations", f'{{"metadata":{nested(5000)}}}'),
    ("input_tokens nested 5,000 deep", "/responses/input_tokens", f'{{{MODEL},"input":{nested(5000)}}}'),
    ("lone surrogate in input", "/responses", f'{{{MODEL},"input":"\\ud800"}}'),
    ("lone surrogate in a streamed input", "/responses", f'{{{MODEL},"input":"x\\udfff","stream":true}}'),
    ("lone surrogate in instructions", "/responses", f'{{{MODEL},"input":"hi","instructions":"\\udc00"}}'),
    ("lone surrogate in metadata", "/responses", f'{{{MODEL},"input":"hi","metadata":{{"k":"\\ud800"}}}}'),
    ("lone surrogate as model", "/responses", '{"model":"\\ud800","input":"hi"}'),
    ("lone surrogate as a schema key", "/responses", f'{{{MODEL},"input":"hi",{tool(SURROGATE_KEY)}}}'),
    ("lone surrogate in a chat message", "/chat/completions",
     f'{{{MODEL},"messages":[{{"role":"user","content":"\\ud800"}}]}}'),
    ("lone surrogate in a conversation item", "/conversations", '{"items":[{"role":"user","content":"\\ud800"}]}'),
    ("lone surrogate to count", "/responses/input_tokens", f'{{{MODEL},"input":"\\ud800"}}'),
    ("1e400 in a text schema", "/responses", f'{{{MODEL},"input":"hi",{text_schema(HUGE_BOUND)}}}'),
    ("1e400 in tool parameters", "/responses", f'{{{MODEL},"input":"hi",{tool(HUGE_BOUND)}}}'),
    ("1e400 in a chat response_format", "/chat/completions", f'{{{MODEL},{CHAT},{chat_schema(HUGE_BOUND)}}}'),
    ("self-referencing $ref in tool parameters", "/responses", f'{{{MODEL},"input":"hi",{tool(SELF_REF)}}}'),
    ("$ref loop in a text schema", "/responses", f'{{{MODEL},"input":"hi",{text_schema(REF_LOOP)}}}'),
    ("self-referencing $ref as the schema", "/chat/completions", f'{{{MODEL},{CHAT},{chat_schema(ROOT_REF)}}}'),
    ("NaN temperature", "/responses", f'{{{MODEL},"input":"hi","temperature":NaN}}'),
    ("Infinity top_p", "/responses", f'{{{MODEL},"input":"hi","top_p":Infinity}}'),
    ("-Infinity max_output_tokens", "/responses", f'{{{MODEL},"input":"hi","max_output_tokens":-Infinity}}'),
    ("NaN in a tool schema (echoed back)", "/responses",
     f'{{{MODEL},"input":"hi",{tool(NAN_DEFAULT)}}}'),
    ("NaN in chat", "/chat/completions", f'{{{MODEL},{CHAT},"temperature":NaN}}'),
    ("a 1 MB model name", "/responses", '{"model":"' + "m" * 1_000_000 + '","input":"hi"}'),
]

FAULT_HEADERS = ["timeout;seconds=inf", "latency_spike;seconds=inf", "slow_stream;seconds=nan",
                 "429;retry_after=inf", "503;retry_after=1e308", "stream_drop;after_events=1e999"]

BODY = b'{"model":"gpt-4o","input":"hi"}'
CHUNKED = {
    "a chunk size that is not hex": b"ZZ\r\n" + BODY + b"\r\n0\r\n\r\n",
    "a chunk without its terminator": hex(len(BODY))[2:].encode() + b"\r\n" + BODY + b"XX0\r\n\r\n",
}

WS = '"type":"response.create","model":"gpt-4o"'
WS_MESSAGES: list[tuple[str, str | bytes]] = [
    ("binary, not UTF-8", b"\xff\xfe\x00"),
    ("not JSON", "hello"),
    ("JSON null", "null"),
    ("a JSON array", "[1, 2]"),
    ("nested 5,000 deep", f'{{{WS},"input":{nested(5000)}}}'),
    ("metadata nested 150 deep", f'{{{WS},"input":"hi","metadata":{nested_object(150)}}}'),
    ("a lone surrogate in input", f'{{{WS},"input":"\\ud800"}}'),
    ("a lone surrogate as stream_id", f'{{{WS},"input":"hi","stream_id":"\\udc00"}}'),
    ("NaN temperature", f'{{{WS},"input":"hi","temperature":NaN}}'),
    ("1e400 in tool parameters", f'{{{WS},"input":"hi",{tool(HUGE_BOUND)}}}'),
    ("a self-referencing $ref", f'{{{WS},"input":"hi",{tool(SELF_REF)}}}'),
    ("type as a list", '{"type":["response.create"]}'),
    ("a 100 kB model name", '{"type":"response.create","model":"' + "m" * 100_000 + '","input":"hi"}'),
]


def assert_client_error(status: int, body: Any) -> None:
    assert 400 <= status < 500, (status, body)
    assert set(body["error"]) == {"message", "type", "param", "code"}
    assert not any(marker in body["error"]["message"] for marker in INTERNAL), body["error"]["message"]


def assert_serving(server: ServerProcess) -> None:
    response = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi"}, timeout=10)
    assert response.status_code == 200 and response.json()["status"] == "completed"


@pytest.mark.parametrize(("path", "body"), [(path, body) for _, path, body in BODIES],
                         ids=[name for name, _, _ in BODIES])
def test_hostile_bodies_get_a_4xx(server: ServerProcess, path: str, body: str) -> None:
    response = httpx.post(server.base_url + path, content=body.encode(), timeout=20,
                          headers={"Content-Type": "application/json"})
    assert_client_error(response.status_code, response.json())
    assert_serving(server)


@pytest.mark.parametrize("fault", FAULT_HEADERS)
def test_hostile_fault_headers_get_a_4xx(server: ServerProcess, fault: str) -> None:
    response = httpx.post(f"{server.base_url}/responses", json={"model": "gpt-4o", "input": "hi", "stream": True},
                          headers={"X-LLMSim-Fault": fault}, timeout=10)
    assert_client_error(response.status_code, response.json())
    assert response.json()["error"]["param"] == "X-LLMSim-Fault"


@pytest.mark.parametrize("chunks", list(CHUNKED.values()), ids=list(CHUNKED))
def test_a_malformed_chunked_body_gets_a_4xx(server: ServerProcess, chunks: bytes) -> None:
    head = (b"POST /v1/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n")
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head + chunks)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert_client_error(int(status_line.split()[1]), json.loads(rest.partition(b"\r\n\r\n")[2]))
    assert_serving(server)


@pytest.mark.parametrize("message", [message for _, message in WS_MESSAGES], ids=[name for name, _ in WS_MESSAGES])
def test_hostile_websocket_messages_get_an_error_event_and_the_connection_stays(
        server: ServerProcess, message: str | bytes) -> None:
    with connect(f"ws://127.0.0.1:{server.port}/v1/responses", open_timeout=10) as ws:
        ws.send(message)
        event = json.loads(ws.recv(timeout=10))
        assert event["type"] == "error"
        assert_client_error(event["status"], event)
        ws.send(f'{{{WS},"input":"still there?"}}')
        while (event := json.loads(ws.recv(timeout=10)))["type"] not in ("response.completed", "error"):
            pass
        assert event["type"] == "response.completed"
