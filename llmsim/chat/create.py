"""POST /chat/completions: the same prompt rules, backends, scenarios, pacing, rate limits and faults as
/responses, on the one template (llmsim/orchestrate.py)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from llmsim.chaos.faults import Admission
from llmsim.chat import completions as chat
from llmsim.chat.schema import ChatRequest
from llmsim.errors import APIError
from llmsim.generation import Delta, Prompt
from llmsim.request import Answer, ApiRequest, error_of
from llmsim.runtime.fairness import fair
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.runtime.waits import ClientGone
from llmsim.shared import compat
from llmsim.shared.events import SerializedEvent, dumps
from llmsim.surface import Job
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface

log = logging.getLogger("llmsim")
CHUNK = "chat.completion.chunk"


@dataclass
class Made:
    """A request admitted (scenarios, rate limits, faults) and its completion's chunks, not yet drawn."""

    completion: chat.Completion
    events: Iterator[SerializedEvent]
    admission: Admission


@dataclass
class Read:
    request: ChatRequest
    profile: Profile


class Create:
    """The Chat Completions surface's generating steps, as the one template runs them (llmsim/orchestrate.py)."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        request = chat.parse(asked.body, asked.lenient)
        profile = pipeline.catalog.resolve(request.model, missing_status=404)
        prompt = chat.build_prompt(request, profile, pipeline.seed if asked.seed is None else asked.seed)
        prompt = replace(prompt, text_mode=asked.text_mode or prompt.text_mode)
        return Job(prompt, bool(request.stream), Read(request, profile))

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None
             ) -> Made:
        read: Read = job.request
        request = read.request
        prompt, admission = pipeline.direct_and_admit(self.surface, job.prompt, asked, bool(request.stream), whole,
                                                      admitted)

        def deltas(choice_prompt: Prompt) -> Iterator[Delta]:
            return admission.deltas(pipeline.generate(choice_prompt, asked.speed))

        completion = chat.Completion(request, read.profile, prompt)
        chunks = _chunks(completion, chat.choice_prompts(prompt, request.n or 1), deltas)
        return Made(completion, admission.events(ErrorChunk(), chunks), admission)

    def streamed(self, pipeline: Pipeline, made: Made, asked: ApiRequest, together: bool) -> Answer:
        """When nothing waits in it, slows or cuts it, its frames go out in as few writes as fit."""
        return Answer(frames=_frames(fair(made.events)), together=together, ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))

    def drained(self, made: Made) -> APIError | None:
        failed = error_of(made.events, made.admission.ticket)
        return None if failed is None else APIError(ErrorChunk.message(failed), status=500, type="server_error")

    def answered(self, pipeline: Pipeline, made: Made, asked: ApiRequest) -> Answer:
        return Answer(body=made.completion.body(), ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))


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
    except ShuttingDown as cut:  # the server's graceful timeout is over: the stream ends in an error chunk
        yield "error", ErrorChunk.dumps(ErrorChunk.error(cut.code, cut.message))
        return
    except Exception:  # noqa: BLE001 - a backend failure mid-way becomes the stream's error chunk, not its details
        log.exception("generation failed")
        event = ErrorChunk.error("server_error", "The model failed to generate a response.")
        yield "error", ErrorChunk.dumps(event)
        return
    if completion.include_usage:
        yield CHUNK, dumps(completion.usage_chunk())


def _frames(events: Iterator[SerializedEvent]) -> Iterator[str]:
    """`data: CHUNK` lines, then `data: [DONE]` unless the stream ended in an error."""
    last = None
    for last, data in events:  # noqa: B007 - the last kind says how the stream ended
        yield f"data: {data}\n\n"
    if last != "error":
        yield "data: [DONE]\n\n"


class ErrorChunk:
    """How a chat stream ends in error (`data: {"error": {...}}`, which the SDK raises on); it stands in for the
    event builder when an injected stream fault ends the stream."""

    terminal = frozenset({"error"})
    response = None

    @staticmethod
    def error(code: str, message: str, param: str | None = None) -> dict[str, Any]:
        return {"type": "error", "error": {"message": message, "type": "server_error", "param": param, "code": code}}

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        yield self.error(code, message)

    @staticmethod
    def dumps(event: dict[str, Any]) -> str:
        return dumps({"error": event["error"]})

    @staticmethod
    def message(data: str) -> str:
        return str(json.loads(data)["error"]["message"])
