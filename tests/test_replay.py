"""A stored response's events are built again on replay: the same events as were (or would have been) sent."""

from __future__ import annotations

import json
import re
from array import array
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from llmsim.generation import (
    Delta,
    Finish,
    ReasoningDelta,
    TextAnnotation,
    TextDelta,
    TextRun,
    ToolArgsDelta,
    ToolCallStart,
    ToolItem,
    Usage,
)
from llmsim.responses.events import PACED_TEXT, TEXT_DELTA, Entropy, EventBuilder, dumps
from llmsim.responses.replay import DeltaLog, Replay
from llmsim.testing import ServerProcess

LOGPROB = {"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}


def start() -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 1, "status": "in_progress", "completed_at": None,
            "error": None, "incomplete_details": None, "model": "m", "output": [], "usage": None}


def every_kind() -> list[Delta]:
    return [ReasoningDelta(tokens=5), ReasoningDelta(text="think "), ReasoningDelta(text="hard"),
            ReasoningDelta(summary="sum"), ReasoningDelta(summary="mary"),
            TextDelta("Hi", logprobs=[LOGPROB]), TextDelta(" there ✓", logprobs=[LOGPROB]),
            TextAnnotation({"type": "url_citation", "url": "https://x", "title": "x", "start_index": 0,
                            "end_index": 2}),
            ToolItem({"type": "code_interpreter_call", "code": "print(1)" * 10, "container_id": "c",
                      "outputs": [{"type": "logs", "logs": "1"}]}),
            ToolCallStart("call_1", "f"), ToolArgsDelta('{"a":'), ToolArgsDelta("1}"),
            ToolCallStart("call_2", "g", "custom_tool_call"), ToolArgsDelta("free text"),
            Finish("tool_calls", Usage(10, 20, 5))]


def failing() -> Iterator[Delta]:
    yield TextDelta("partial")
    raise RuntimeError("the model broke")


def sent_and_replayed(deltas: Any, **options: bool) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    builder = EventBuilder(start(), entropy=Entropy(), **options)
    log = DeltaLog()
    sent = [(event["type"], dumps(event)) for event in builder.run(log.recording(deltas))]  # as the pipeline does
    return sent, Replay(log, builder).events(builder.response)


@pytest.mark.parametrize("options", [{}, {"obfuscate": True, "encrypted_reasoning": True}])
def test_every_delta_kind_replays_byte_for_byte(options: dict[str, bool]) -> None:
    sent, replayed = sent_and_replayed(iter(every_kind()), **options)
    assert len(sent) > 30 and replayed == sent
    assert any('"obfuscation"' in data for _, data in sent) is bool(options)
    assert any('"encrypted_content"' in data for _, data in sent) is bool(options)


@pytest.mark.parametrize("obfuscate", [False, True])
def test_text_runs_sent_as_the_builder_renders_them_replay_byte_for_byte(obfuscate: bool) -> None:
    deltas = [ReasoningDelta(summary="plan"), TextRun((("One", 1), (" two", 1), (' "3"', 2)), 4),
              TextDelta("!", logprobs=[LOGPROB]), TextRun(((" and ✓", 2),), 2), Finish("stop", Usage(3, 9))]
    builder = EventBuilder(start(), entropy=Entropy(), obfuscate=obfuscate, render=True)
    log = DeltaLog()
    sent = [event if isinstance(event, tuple) else (event["type"], dumps(event))
            for event in builder.run(log.recording(iter(deltas)))]  # as the pipeline sends a stream
    assert sum(kind == "response.output_text.delta" for kind, _ in sent) == 5
    assert Replay(log, builder).events(builder.response) == sent


@pytest.mark.parametrize("obfuscate", [False, True])
def test_text_runs_handed_whole_to_the_transport_replay_byte_for_byte(obfuscate: bool) -> None:
    deltas = [ReasoningDelta(summary="plan"), TextRun((("One", 1), (" two", 1), (' "3"', 2), ("\n✓", 1)), 5),
              TextDelta("!", logprobs=[LOGPROB]), TextRun(((" and", 1), (" more", 1)), 2), Finish("stop", Usage(3, 9))]
    builder = EventBuilder(start(), entropy=Entropy(), obfuscate=obfuscate, render=True)
    builder.whole_runs = True  # as the pipeline sets it for an SSE stream: the transport frames a run at once
    log = DeltaLog()
    sent: list[tuple[str, str]] = []
    for event in builder.run(log.recording(iter(deltas))):
        if isinstance(event, tuple) and event[0] == PACED_TEXT:
            assert event[1].pace is None
            sent += [(TEXT_DELTA, data) for data in event[1].data]
        else:
            sent.append(event if isinstance(event, tuple) else (event["type"], dumps(event)))
    assert [json.loads(data)["sequence_number"] for _, data in sent] == list(range(len(sent)))
    assert sum(kind == TEXT_DELTA for kind, _ in sent) == 7
    assert Replay(log, builder).events(builder.response) == sent
    assert builder.response["output"][-1]["content"][0]["text"] == 'One two "3"\n✓! and more'


@pytest.mark.parametrize("long_piece", [False, True])
def test_a_dumped_replay_loads_and_replays_byte_for_byte_as_does_one_dumped_before_hex_lengths(
        long_piece: bool) -> None:
    builder = EventBuilder(start(), entropy=Entropy(), obfuscate=True, encrypted_reasoning=True)
    log = DeltaLog()
    deltas = [TextDelta("x" * 300), *every_kind()] if long_piece else every_kind()
    sent = [(event["type"], dumps(event)) for event in builder.run(log.recording(iter(deltas)))]
    dumped = Replay(log, builder).dump()
    assert Replay.load(dumped).events(builder.response) == sent
    # Pieces shorter than 256 characters: their lengths as bytes; else as 32-bit words, as written before.
    assert json.loads(dumped)[1].startswith("1:") is not long_piece
    older = json.loads(dumped)
    older[1] = array("I", log.lengths).tobytes().hex()  # as a replay was written before lengths could be bytes
    assert Replay.load(json.dumps(older)).events(builder.response) == sent
    older[1] = list(log.lengths)  # as a replay was written before: the lengths a JSON list
    assert Replay.load(json.dumps(older)).events(builder.response) == sent


def test_a_backend_failure_replays_as_the_same_failure() -> None:
    sent, replayed = sent_and_replayed(failing())
    assert sent[-1][0] == "response.failed" and "The model failed to generate a response." in sent[-1][1]
    assert "the model broke" not in sent[-1][1]  # the backend's own text stays in the log (issue 13)
    assert replayed == sent


def test_a_response_that_never_finished_replays_the_same() -> None:
    sent, replayed = sent_and_replayed(iter([TextDelta("cut")]))
    assert "stopped without finishing" in sent[-1][1] and replayed == sent


def test_the_log_is_compact() -> None:
    log = DeltaLog()
    for _ in log.recording(TextDelta(f"w{i} ") for i in range(100)):
        pass
    log.seal()
    assert len(log.kinds) == 100 and len(log.lengths) == 100 and log.text.startswith("w0 w1 ") and not log.others


def normalized(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Events with what differs between two runs of one seed blanked: ids, times, obfuscation."""
    text = json.dumps(events)
    text = re.sub(r'"(resp|msg|rs)_[0-9a-f]{48}"', r'"\1_"', text)
    text = re.sub(r'"(created_at|completed_at)": \d+', r'"\1": 0', text)
    text = re.sub(r', "obfuscation": "[^"]*"', "", text)
    return json.loads(text)


def test_a_response_created_without_streaming_replays_its_stream(client: openai.OpenAI,
                                                                  server: ServerProcess) -> None:
    seeded = {"X-LLMSim-Seed": "11"}
    body = {"model": "gpt-5", "input": "Tell me a story", "reasoning": {"summary": "auto"}}
    created = httpx.post(f"{server.base_url}/responses", json=body, headers=seeded).json()
    with httpx.stream("POST", f"{server.base_url}/responses", json={**body, "stream": True}, headers=seeded) as sse:
        streamed = [json.loads(line[6:]) for line in sse.iter_lines() if line.startswith("data: ")]
    replayed = [event.model_dump(mode="json", exclude_unset=True)
                for event in client.responses.retrieve(created["id"], stream=True)]
    assert [e["type"] for e in replayed] == [e["type"] for e in streamed] and len(replayed) > 20
    assert replayed[-1]["response"] == client.responses.retrieve(created["id"]).model_dump(mode="json",
                                                                                           exclude_unset=True)
    assert normalized(replayed) == normalized(streamed)
    tail = list(client.responses.retrieve(created["id"], stream=True, starting_after=len(replayed) - 3))
    assert [e.sequence_number for e in tail] == [len(replayed) - 2, len(replayed) - 1]


def test_a_streamed_response_replays_the_bytes_it_sent(server: ServerProcess) -> None:
    body = {"model": "gpt-4o", "input": "hi", "stream": True, "include": ["message.output_text.logprobs"],
            "top_logprobs": 2}
    sent = httpx.post(f"{server.base_url}/responses", json=body).text
    response_id = json.loads(sent.split("data: ", 2)[1].split("\n", 1)[0])["response"]["id"]
    replayed = httpx.get(f"{server.base_url}/responses/{response_id}", params={"stream": "true"}).text
    assert '"obfuscation"' in sent and replayed == sent.rsplit("\n: ", 1)[0] + "\n"


def test_a_plain_stream_replays_the_bytes_it_sent(server: ServerProcess) -> None:
    """No logprobs: the answer's text comes in runs, framed at once by the SSE transport."""
    body = {"model": "gpt-4o", "input": "Tell me a story", "stream": True}
    sent = httpx.post(f"{server.base_url}/responses", json=body).text
    response_id = json.loads(sent.split("data: ", 2)[1].split("\n", 1)[0])["response"]["id"]
    replayed = httpx.get(f"{server.base_url}/responses/{response_id}", params={"stream": "true"}).text
    assert sent.count("event: response.output_text.delta\n") > 20 and '"obfuscation"' in sent
    assert replayed == sent.rsplit("\n: ", 1)[0] + "\n"
