"""POST /chat/completions: the same prompt rules, backends, pacing, rate limits and faults as /responses."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import closing

from flask import Blueprint, Response, jsonify
from flask.typing import ResponseReturnValue

from llmsim import chat
from llmsim.api.chaos import gate
from llmsim.api.http import json_body, services
from llmsim.api.responses import _seed, _speed
from llmsim.api.sse import SSE_HEADERS
from llmsim.backends.base import Delta, Prompt
from llmsim.errors import APIError
from llmsim.pipeline import dumps

bp = Blueprint("chat", __name__)


@bp.post("/chat/completions")
def create() -> ResponseReturnValue:
    pipeline = services().pipeline
    request = chat.parse(json_body())
    profile = pipeline.catalog.resolve(request.model)
    seed = _seed()
    prompt = chat.build_prompt(request, profile, pipeline.seed if seed is None else seed)
    admission = gate("chat.completions")(prompt, bool(request.stream))
    speed = _speed()

    def deltas(choice_prompt: Prompt) -> Iterator[Delta]:
        return admission.deltas(pipeline.generate(choice_prompt, speed))

    completion = chat.Completion(request, profile, prompt)
    prompts = chat.choice_prompts(prompt, request.n or 1)
    if request.stream:
        return Response(_frames(completion, prompts, deltas), mimetype="text/event-stream", headers=SSE_HEADERS)
    for index, choice_prompt in enumerate(prompts):
        with closing(deltas(choice_prompt)) as stream:  # type: ignore[type-var]
            completion.run(stream, index)
    return jsonify(completion.body())


def _frames(completion: chat.Completion, prompts: list[Prompt],
            deltas: Callable[[Prompt], Iterator[Delta]]) -> Iterator[str]:
    """`data: CHUNK` lines, choice after choice, then the usage chunk if asked, then `data: [DONE]`."""
    try:
        for index, choice_prompt in enumerate(prompts):
            with closing(deltas(choice_prompt)) as stream:  # type: ignore[type-var]
                for chunk in completion.chunks(stream, index):
                    yield f"data: {dumps(chunk)}\n\n"
    except Exception as exc:  # noqa: BLE001 - mid-stream the status is sent: the error goes in the stream
        error = APIError(f"The model failed to generate a response: {exc}", status=500, type="server_error")
        yield f"data: {dumps(error.body())}\n\n"
        return
    if completion.include_usage:
        yield f"data: {dumps(completion.usage_chunk())}\n\n"
    yield "data: [DONE]\n\n"
