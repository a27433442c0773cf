"""The simulator: answer text shaped by the question (`text.py`), reasoning scaled by effort, exact token
accounting; tool calls and schema-valid JSON as planned by `backends.tools`.

Everything random draws from one `random.Random` seeded by the prompt, so the same
seed and input give the same words in any process.
"""

from __future__ import annotations

import json
import math
import random
import threading
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from llmsim import tokens
from llmsim.backends.sim import embeddings, formats, jsongen, prompted, text
from llmsim.backends.sim.fake import lazy_faker
from llmsim.backends.sim.text import Answer
from llmsim.backends.sim.tools import Call, Planner, Say, Step
from llmsim.generation import (
    Delta,
    Embedded,
    EmbedRequest,
    Finish,
    Prompt,
    ReasoningDelta,
    TextAnnotation,
    TextDelta,
    TextRun,
    ToolArgsDelta,
    ToolCallStart,
    ToolItem,
    Usage,
    last_user_text,
)
from llmsim.rng import for_request as rng_for
from llmsim.rng import shared

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

# Reasoning tokens per visible output token, by effort (spec R4.3.1).
REASONING_MULTIPLIER = {"minimal": 0.5, "low": 1.5, "medium": 3.0, "high": 6.0, "xhigh": 10.0, "max": 14.0,
                        "ultra": 20.0}
# Summary length as a share of reasoning tokens, in words (spec R3.2.2).
SUMMARY_SHARE = {"concise": 0.05, "auto": 0.10, "detailed": 0.15}
# Visible answer length in tokens, by text.verbosity.
LENGTH_RANGE = {"low": (12, 60), "medium": (30, 160), "high": (90, 400)}
JSON_OBJECT = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
REASONING_CHUNK = 16  # hidden reasoning tokens per delta: fine enough for pacing, cheap to emit
RUN_CHUNKS = 256  # text deltas per TextRun: a long answer still comes in pieces the worker takes turns between



class SimBackend:
    name = "sim"
    computes = False

    def __init__(self, length_range: dict[str, tuple[int, int]] | None = None, tool_call_rate: float = 0.0,
                 text_mode: str = text.DEFAULT_MODE) -> None:
        self.length_range = length_range or LENGTH_RANGE
        self.tool_call_rate = tool_call_rate
        self.text_mode = text_mode
        # Building a Faker costs milliseconds; one instance is reseeded per request instead. Every draw from it
        # happens under the lock, before the first delta is yielded, so requests never share its state. Both
        # are made here, in the worker, never at import: a lock made before gevent patches is a real one.
        self._faker = lazy_faker()
        self._faker_lock = threading.Lock()

    def embed(self, request: EmbedRequest) -> Embedded:
        size = request.profile.embedding.dimensions if request.profile.embedding else embeddings.DEFAULT_SIZE
        return Embedded([embeddings.embed(text, request.profile.id, size, request.seed) for text in request.texts])

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        rng = rng_for(prompt.seed)
        encoding = prompt.profile.encoding
        mode = prompt.text_mode or self.text_mode
        low, high = self.length_range[prompt.verbosity]
        target = rng.randint(low, high)
        question = last_user_text(prompt.turns)
        with self._faker_lock:
            fake = self._faker
            if not shared(rng):  # an unseeded request's words need not repeat: Faker goes on as it is
                fake.seed_instance(rng.getrandbits(64))
            steps = Planner(prompt, rng, fake, self.tool_call_rate).plan()
            says = {id(step): text.tokenize(step.text, encoding) if step.text is not None and not step.summary else
                    self._answer(prompt, fake, mode, question, target, rng, step.hints, step.text)
                    for step in steps if isinstance(step, Say)}
            content = sum(says[id(s)].tokens if isinstance(s, Say) else self._step_tokens(s, encoding) for s in steps)
            planned_reasoning = (
                math.ceil(REASONING_MULTIPLIER[prompt.reasoning_effort] * content) if prompt.reasoning_effort else 0
            )
            budget = prompt.max_output_tokens
            reasoning = min(planned_reasoning, budget) if budget is not None else planned_reasoning
            summary: list[str] = []
            if prompt.reasoning_effort:
                scripted = prompt.script.reasoning_summary if prompt.script else None
                if scripted or prompt.reasoning_summary:
                    words = max(1, round(SUMMARY_SHARE[prompt.reasoning_summary or "auto"] * reasoning))
                    summary = scripted.split(" ") if scripted else self._summary(mode, question, words, rng, fake)
        left = None if budget is None else max(0, budget - reasoning)

        if prompt.reasoning_effort:
            for start in range(0, reasoning, REASONING_CHUNK):
                yield ReasoningDelta(tokens=min(REASONING_CHUNK, reasoning - start))
            for i, word in enumerate(summary):
                yield ReasoningDelta(summary=word if i == 0 else " " + word)

        spent, truncated = 0, reasoning < planned_reasoning
        for step in steps:
            if isinstance(step, Say):
                answer = says[id(step)]
                visible = answer if left is None else answer.truncated(max(0, left - spent))
                truncated = truncated or visible.tokens < answer.tokens
                if prompt.logprobs:
                    yield from self._stream_text(visible, rng, prompt)
                else:
                    yield from _runs(visible.chunks)
                if step.annotations:  # the text joined only to place them: most answers have none
                    written = visible.text
                    for note in step.annotations:
                        if note.get("end_index", note.get("index", 0)) <= len(written):
                            yield TextAnnotation(note)
                spent += visible.tokens
            elif isinstance(step, Call):
                yield ToolCallStart(step.call_id, step.name, step.kind, step.namespace)
                for piece in self._stream_text(text.tokenize(step.text, encoding), rng, prompt):
                    yield ToolArgsDelta(piece.text, piece.tokens)
                spent += self._step_tokens(step, encoding)
            else:
                count = self._step_tokens(step, encoding)
                yield ToolItem(step.result.item, count, step.result.partial_images)
                spent += count
        usage = Usage(prompt.input_tokens, reasoning + spent, reasoning)
        called = any(isinstance(s, Call) for s in steps)
        yield Finish("length" if truncated else "tool_calls" if called else "stop", usage)

    def _answer(self, prompt: Prompt, fake: Faker, mode: str, question: str, target: int, rng: random.Random,
                hints: Mapping[str, str], summary: str | None = None) -> Answer:
        """Simulated answer text: the format the prompt asks for when a recogniser of `formats/` claims it, JSON
        when text.format asks for it (in every text mode), else the mode's text."""
        fmt = prompt.text_format
        if mode != "echo":  # a format the prompt asks for in words (dspy, ReAct, code agents, tags, JSON)
            recognised = formats.respond(prompt, rng, fake, hints)
            if recognised is not None:
                return text.tokenize(recognised, prompt.profile.encoding)
        if summary is not None:  # what the tools returned, when no format is asked for
            return text.tokenize(summary, prompt.profile.encoding)
        if fmt.get("type") == "json_schema":
            return text.tokenize(json.dumps(jsongen.generate(fmt["schema"], rng, fake, hints), ensure_ascii=False),
                                 prompt.profile.encoding)
        if fmt.get("type") == "json_object":  # the shape the prompt asks for, else a one-key object
            schema = prompted.requested_schema(prompt.turns) or JSON_OBJECT
            return text.tokenize(json.dumps(jsongen.generate(schema, rng, fake, hints), ensure_ascii=False),
                                 prompt.profile.encoding)
        return text.compose(mode, question, target, rng, prompt.profile.encoding, fake=lambda: fake)

    @staticmethod
    def _summary(mode: str, question: str, words: int, rng: random.Random, fake: Faker) -> list[str]:
        """Reasoning summary words: a plan for the answer, or the filler of the lorem and faker modes."""
        if mode == "faker":
            out = fake.words(nb=words)
        elif mode == "lorem":
            out = [rng.choice(text.phrases.LOREM_WORDS) for _ in range(words)]
        else:
            return text.plan(question, words)
        out[0] = out[0].capitalize()
        out[-1] += "."
        return out

    @staticmethod
    def _step_tokens(step: Step, encoding: str) -> int:
        if isinstance(step, Call):
            return tokens.count(step.text, encoding)
        item = step.result.item  # type: ignore[union-attr]
        shown = item.get("code") or item.get("arguments") or item.get("revised_prompt") or \
            json.dumps(item.get("action") or item.get("queries") or "")
        return tokens.count(shown, encoding)

    @staticmethod
    def _stream_text(answer: Answer, rng: random.Random, prompt: Prompt) -> Iterator[TextDelta]:
        for piece, count in answer.chunks:
            logprobs: list[dict] = []
            if prompt.logprobs:
                logprob = -round(rng.expovariate(8.0), 6)
                alternatives = [
                    {"token": alt, "logprob": round(logprob - rng.uniform(0.5, 6.0), 6), "bytes": list(alt.encode())}
                    for alt in rng.sample(_ALTERNATIVES, min(prompt.top_logprobs, len(_ALTERNATIVES)))
                ]
                logprobs = [{"token": piece, "logprob": logprob, "bytes": list(piece.encode()),
                             "top_logprobs": alternatives}]
            yield TextDelta(text=piece, tokens=count, logprobs=logprobs)


def _runs(chunks: list[tuple[str, int]]) -> Iterator[TextRun]:
    for start in range(0, len(chunks), RUN_CHUNKS):
        run = tuple(chunks[start:start + RUN_CHUNKS])
        yield TextRun(run, sum(tokens for _, tokens in run))


_ALTERNATIVES = [" the", " a", " and", " of", " to", " in", " is", " that", " it", " for", " as", " with",
                 " was", " on", " be", " by", " this", " are", " or", " an"]
