"""POST /chat/completions: the same prompt rules, backends, scenarios, pacing, rate limits and faults as
/responses, on the one template (llmsim/orchestrate.py), and on the same whole-run road: a JSON answer is built
from the backend's text runs, a stream's chunks are formatted from them (llmsim/chat/completions.py)."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from llmsim.chaos.faults import Admission
from llmsim.chat import completions as chat
from llmsim.chat.schema import ChatRequest
from llmsim.errors import APIError
from llmsim.generation import Delta, Prompt
from llmsim.request import Answer, ApiRequest, error_of
from llmsim.runtime.fairness import fair
from llmsim.shared import compat
from llmsim.shared.events import SerializedEvent
from llmsim.store.objects import OPENAI_FILE
from llmsim.surface import Job
from llmsim.timing.profiles import Profile

if TYPE_CHECKING:  # the pipeline runs what this module asks of it; nothing below imports this
    from llmsim.pipeline import Pipeline
    from llmsim.surface import Surface


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
    """The Chat Completions surface's generating steps, as the one template runs them."""

    def __init__(self, surface: Surface) -> None:
        self.surface = surface

    def read(self, pipeline: Pipeline, asked: ApiRequest) -> Job:
        request = chat.parse(asked.body, asked.lenient)
        profile = pipeline.catalog.resolve(request.model, missing_status=404)
        prompt = chat.build_prompt(request, profile, pipeline.seed if asked.seed is None else asked.seed,
                                   None if pipeline.files is None else functools.partial(pipeline.files, OPENAI_FILE,
                                                                                         asked.owner))
        prompt = replace(prompt, text_mode=asked.text_mode or prompt.text_mode)
        return Job(prompt, bool(request.stream), Read(request, profile))

    def make(self, pipeline: Pipeline, asked: ApiRequest, job: Job, whole: bool, admitted: Admission | None
             ) -> Made:
        read: Read = job.request
        request, stream = read.request, bool(read.request.stream)
        prompt, admission = pipeline.direct_and_admit(self.surface, job.prompt, asked, stream, whole, admitted)

        def deltas(choice_prompt: Prompt) -> Iterator[Delta]:
            made = admission.deltas(pipeline.generate(choice_prompt, asked.speed, runs=True, key=asked.key))
            return made if stream else fair(made)  # a long answer takes turns with the worker's other requests

        completion = chat.Completion(request, read.profile, prompt, render=stream or admission.stream_fault is not None)
        chunks = completion.run(deltas(choice) for choice in chat.choice_prompts(prompt, request.n or 1))
        return Made(completion, admission.events(completion, chunks), admission)

    def streamed(self, pipeline: Pipeline, made: Made, asked: ApiRequest, together: bool) -> Answer:
        """When nothing waits in it, slows or cuts it, its frames go out in as few writes as fit."""
        return Answer(frames=_frames(fair(made.events)), together=together, ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))

    def drained(self, made: Made) -> APIError | None:
        failed = error_of(made.events, made.admission.ticket)
        return None if failed is None else APIError(chat.error_message(failed), status=500, type="server_error")

    def answered(self, pipeline: Pipeline, made: Made, asked: ApiRequest) -> Answer:
        return Answer(body=made.completion.body(), ticket=made.admission.ticket,
                      headers=compat.headers(asked.warnings))


def _frames(events: Iterator[SerializedEvent]) -> Iterator[str]:
    """`data: CHUNK` lines, then `data: [DONE]` unless the stream ended in an error."""
    last = None
    for last, data in events:  # noqa: B007 - the last kind says how the stream ended
        yield f"data: {data}\n\n"
    if last != "error":
        yield "data: [DONE]\n\n"
