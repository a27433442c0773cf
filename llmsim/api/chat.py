"""POST /chat/completions: the same prompt rules, backends, scenarios, pacing, rate limits and faults as /responses."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import replace
from typing import Any

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue

from llmsim.api import relay, writes
from llmsim.api.chaos import gate
from llmsim.api.http import json_body, seed_header, services, speed_header, text_mode_header
from llmsim.api.sse import SSE_HEADERS, batched, cork
from llmsim.chaos.faults import Admission
from llmsim.chat import completions as chat
from llmsim.errors import APIError
from llmsim.generation import Delta, Prompt
from llmsim.pipeline import SerializedEvent, dumps
from llmsim.runtime.fairness import fair
from llmsim.runtime.waits import ClientGone

bp = Blueprint("chat", __name__)
log = logging.getLogger("llmsim")
CHUNK = "chat.completion.chunk"


@bp.post("/chat/completions")
def create() -> ResponseReturnValue:
    pipeline = services().pipeline
    body = json_body()
    answer = relay.answer("chat/completions", body, speed_header(), raw=True)
    if answer.relayed is not None:
        return relay.http_response(answer.relayed, named_events=False)
    request = chat.parse(body)
    profile = pipeline.catalog.resolve(request.model)
    seed = seed_header()
    prompt = chat.build_prompt(request, profile, pipeline.seed if seed is None else seed)
    prompt = replace(prompt, text_mode=text_mode_header() or prompt.text_mode)
    speed = speed_header()
    paced = pipeline.pacer.paces(prompt, speed)
    whole = not request.stream and not paced
    if whole:
        writes.hold()  # its admission goes to Redis with its request log entry as it is answered: one round trip
    completion, events, admission = _made(request, profile, prompt, body, answer, speed, whole)
    if request.stream:  # nothing paces, slows or cuts it: its frames go out in as few writes as fit
        together = not paced and admission.stream_fault is None
        frames = batched(_frames(fair(events))) if together else _frames(fair(events))
        if together:
            cork()
        return Response(frames, mimetype="text/event-stream", headers=SSE_HEADERS)
    failed = _drain(events)
    if not writes.commit():  # made under faults or a scenario the fleet has since changed: made again under its own
        completion, events, admission = _made(request, profile, prompt, body, answer, speed, whole)
        failed = _drain(events)
    if failed is not None:
        raise APIError(ErrorChunk.message(failed), status=500, type="server_error")
    return jsonify(completion.body())


def _drain(events: Iterator[SerializedEvent]) -> str | None:
    """The chunks drawn (the choices keep what they said); the error chunk's data when the answer ended in one."""
    for kind, data in events:
        if kind == "error":
            return data
    return None


def _made(request: Any, profile: Any, prompt: Prompt, body: Any, answer: relay.Answer, speed: float | None,
          whole: bool) -> tuple[chat.Completion, Iterator[SerializedEvent], Admission]:
    """The request admitted (scenarios, rate limits, faults) and its completion's chunks, not yet drawn."""
    pipeline = services().pipeline
    prompt, admission = pipeline.admit(prompt, body, bool(request.stream), answer.admit or gate("chat.completions"),
                                       whole)

    def deltas(choice_prompt: Prompt) -> Iterator[Delta]:
        return admission.deltas(pipeline.generate(choice_prompt, speed))

    completion = chat.Completion(request, profile, prompt)
    chunks = _chunks(completion, chat.choice_prompts(prompt, request.n or 1), deltas)
    return completion, admission.events(ErrorChunk(), chunks, ErrorChunk.dumps), admission  # type: ignore[arg-type]


def _chunks(completion: chat.Completion, prompts: list[Prompt],
            deltas: Callable[[Prompt], Iterator[Delta]]) -> Iterator[SerializedEvent]:
    """Every choice's chunks, choice after choice, then the usage chunk when stream_options asks for it."""
    try:
        for index, choice_prompt in enumerate(prompts):
            with closing(deltas(choice_prompt)) as stream:  # type: ignore[type-var]
                for chunk in completion.chunks(stream, index):
                    yield CHUNK, dumps(chunk)
    except ClientGone:  # the client left mid-wait, or a fault cuts the stream: no failure of the model
        raise
    except Exception:  # noqa: BLE001 - a backend failure mid-way becomes the stream's error chunk, not its details
        log.exception("generation failed")
        event = ErrorChunk.error("server_error", "The model failed to generate a response.")
        yield "error", ErrorChunk.dumps(event)
        return
    if completion.include_usage:
        yield CHUNK, dumps(completion.usage_chunk())


def _frames(events: Iterator[SerializedEvent]) -> Iterator[str]:
    """`data: CHUNK` lines, then `data: [DONE]` unless the stream ended in an error."""
    kind = None
    for kind, data in events:
        yield f"data: {data}\n\n"
    if kind != "error":
        yield "data: [DONE]\n\n"


class ErrorChunk:
    """How a chat stream ends in error (`data: {"error": {...}}`, which the SDK raises on); it stands in for the
    event builder when an injected stream fault ends the stream."""

    @staticmethod
    def error(code: str | None, message: str, param: str | None = None) -> dict[str, Any]:
        return {"type": "error", "error": {"message": message, "type": "server_error", "param": param, "code": code}}

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        yield self.error(code, message)

    @staticmethod
    def dumps(event: dict[str, Any]) -> str:
        return dumps({"error": event["error"]})

    @staticmethod
    def message(data: str) -> str:
        return str(json.loads(data)["error"]["message"])
