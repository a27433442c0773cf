"""The simulator: plausible text from faker, reasoning scaled by effort, exact token accounting.

Everything random draws from one `random.Random` seeded by the prompt, so the same
seed and input give the same words in any process.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

from faker import Faker

from llmsim import tokens
from llmsim.backends.base import Delta, Finish, Prompt, ReasoningDelta, TextDelta, Usage

# Reasoning tokens per visible output token, by effort (spec R4.3.1).
REASONING_MULTIPLIER = {"minimal": 0.5, "low": 1.5, "medium": 3.0, "high": 6.0, "xhigh": 10.0}
# Summary length as a share of reasoning tokens, in words (spec R3.2.2).
SUMMARY_SHARE = {"concise": 0.05, "auto": 0.10, "detailed": 0.15}
# Visible answer length in tokens, by text.verbosity.
LENGTH_RANGE = {"low": (12, 60), "medium": (30, 160), "high": (90, 400)}
REASONING_CHUNK = 16  # hidden reasoning tokens per delta: fine enough for pacing, cheap to emit


class SimBackend:
    name = "sim"

    def __init__(self, length_range: dict[str, tuple[int, int]] | None = None) -> None:
        self.length_range = length_range or LENGTH_RANGE

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        rng = random.Random(prompt.seed)
        fake = Faker()
        fake.seed_instance(rng.getrandbits(64))
        encoding = tokens.encoding(prompt.profile.encoding)

        low, high = self.length_range[prompt.verbosity]
        answer = encoding.encode_ordinary(self._compose(fake, encoding, rng.randint(low, high)))
        planned_reasoning = (
            math.ceil(REASONING_MULTIPLIER[prompt.reasoning_effort] * len(answer)) if prompt.reasoning_effort else 0
        )
        budget = prompt.max_output_tokens
        reasoning = min(planned_reasoning, budget) if budget is not None else planned_reasoning
        visible = answer if budget is None else answer[: max(0, budget - reasoning)]

        if prompt.reasoning_effort:
            for start in range(0, reasoning, REASONING_CHUNK):
                yield ReasoningDelta(tokens=min(REASONING_CHUNK, reasoning - start))
            if prompt.reasoning_summary:
                words = max(1, round(SUMMARY_SHARE[prompt.reasoning_summary] * reasoning))
                summary = self._words(fake, words)
                for i, word in enumerate(summary):
                    yield ReasoningDelta(summary=word if i == 0 else " " + word)

        yield from self._stream_text(visible, encoding, rng, prompt)
        truncated = len(visible) < len(answer) or reasoning < planned_reasoning
        usage = Usage(prompt.input_tokens, reasoning + len(visible), reasoning)
        yield Finish("length" if truncated else "stop", usage)

    @staticmethod
    def _compose(fake: Faker, encoding: object, target_tokens: int) -> str:
        sentences: list[str] = []
        count = 0
        while count < target_tokens:
            sentence = fake.sentence(nb_words=fake.random_int(6, 16))
            sentences.append(sentence)
            count += len(encoding.encode_ordinary(" " + sentence))  # type: ignore[attr-defined]
        return " ".join(sentences)

    @staticmethod
    def _words(fake: Faker, n: int) -> list[str]:
        words = fake.words(nb=n)
        words[0] = words[0].capitalize()
        words[-1] += "."
        return words

    @staticmethod
    def _stream_text(token_ids: list[int], encoding: object, rng: random.Random, prompt: Prompt) -> Iterator[TextDelta]:
        pending = b""
        merged = 0
        for token in token_ids:
            raw = encoding.decode_single_token_bytes(token)  # type: ignore[attr-defined]
            pending += raw
            merged += 1
            try:
                text = pending.decode("utf-8")
            except UnicodeDecodeError:
                continue
            pending = b""
            logprobs: list[dict] = []
            if prompt.logprobs:
                logprob = -round(rng.expovariate(8.0), 6)
                alternatives = [
                    {"token": alt, "logprob": round(logprob - rng.uniform(0.5, 6.0), 6), "bytes": list(alt.encode())}
                    for alt in rng.sample(_ALTERNATIVES, min(prompt.top_logprobs, len(_ALTERNATIVES)))
                ]
                logprobs = [{"token": text, "logprob": logprob, "bytes": list(text.encode()), "top_logprobs": alternatives}]
            yield TextDelta(text=text, tokens=merged, logprobs=logprobs)
            merged = 0


_ALTERNATIVES = [" the", " a", " and", " of", " to", " in", " is", " that", " it", " for", " as", " with",
                 " was", " on", " be", " by", " this", " are", " or", " an"]
