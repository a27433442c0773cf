"""Real local generation with MLX / mlx-lm behind the same Prompt → Deltas contract as the simulator.

Each loaded model owns one native worker thread and a scheduler (scheduler.py) that batches every
request for the model continuously: a request joins the running batch at the next decode step, and one
that stops being read (client gone, cancelled) leaves it at the next step.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from llmsim.backends.mlx import embeddings
from llmsim.backends.mlx.cache import PromptCache
from llmsim.backends.mlx.chat import to_messages, to_tools
from llmsim.backends.mlx.models import ModelSpec, resolve
from llmsim.backends.mlx.parsing import OutputParser, think_markers
from llmsim.backends.mlx.scheduler import DECODE_CONCURRENCY, PROMPT_CONCURRENCY, Scheduler, Sequence, Token
from llmsim.backends.mlx.schema import SchemaProcessor, lltokenizer_for, schema_of
from llmsim.generation import Delta, Embedded, EmbedRequest, Finish, FinishReason, Prompt, Usage
from llmsim.timing.pacing import QueueObserver
from llmsim.timing.profiles import Profile, ReasoningSpec


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling settings the Responses API has no field for, from the model's generation_config.json."""

    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float | None = None

    @classmethod
    def read(cls, path: Path) -> SamplingDefaults:
        file = path / "generation_config.json"
        data = json.loads(file.read_text()) if file.is_file() else {}
        penalty = data.get("repetition_penalty")
        return cls(int(data.get("top_k") or 0), float(data.get("min_p") or 0.0),
                   None if penalty in (None, 1.0) else float(penalty))


@dataclass
class LoadedModel:
    alias: str
    path: Path
    model: Any
    tokenizer: Any  # mlx_lm's TokenizerWrapper
    profile: Profile
    sampling: SamplingDefaults
    cache: PromptCache
    scheduler: Scheduler = field(init=False)
    decode_concurrency: int = DECODE_CONCURRENCY
    prompt_concurrency: int = PROMPT_CONCURRENCY

    def __post_init__(self) -> None:
        self.scheduler = Scheduler(self.model, sorted(self.tokenizer.eos_token_ids), self.cache.keep,
                                   self.decode_concurrency, self.prompt_concurrency, name=self.alias)

    @functools.cached_property
    def lltokenizer(self) -> Any:
        return lltokenizer_for(self.tokenizer)



def thinking_toggle(tokenizer: Any) -> bool:
    """The chat template can switch thinking off (Qwen 3 style `enable_thinking`)."""
    return tokenizer.has_thinking and "enable_thinking" in (getattr(tokenizer, "chat_template", None) or "")


def _profile(alias: str, path: Path, config: dict[str, Any], tokenizer: Any) -> Profile:
    context = int(config.get("max_position_embeddings") or config.get("text_config", {}).get(
        "max_position_embeddings") or 32_768)
    reasoning = None
    if tokenizer.has_thinking:
        efforts = ["none", "low", "medium", "high"] if thinking_toggle(tokenizer) else ["medium"]
        reasoning = ReasoningSpec(efforts=efforts, default="medium")
    return Profile(id=alias, owned_by="mlx", created=int(os.path.getmtime(path)), context_window=context,
                   max_output_tokens=context, reasoning=reasoning, sampling_always=True)


def load_model(spec: ModelSpec, allow_download: bool = False, trust_remote_code: bool = False,
               decode_concurrency: int = DECODE_CONCURRENCY, prompt_concurrency: int = PROMPT_CONCURRENCY
               ) -> LoadedModel:
    from mlx_lm import load

    path = resolve(spec.source, allow_download)
    started = time.monotonic()
    size = sum(f.stat().st_size for f in path.glob("model*.safetensors"))
    say(f"loading {spec.alias} ({size / 1e9:.2f} GB of weights) from {path}")  # mlx-lm's load says nothing
    # return_config: the three of them (mlx_lm's return type allows two or three, with no overloads)
    model, tokenizer, config = cast(tuple[Any, Any, dict[str, Any]],
                                    load(str(path), return_config=True, trust_remote_code=trust_remote_code))
    say(f"loaded {spec.alias} in {time.monotonic() - started:.1f} s")
    return LoadedModel(spec.alias, path, model, tokenizer, _profile(spec.alias, path, config, tokenizer),
                       SamplingDefaults.read(path), PromptCache(model), decode_concurrency, prompt_concurrency)


def say(line: str) -> None:
    """A line on the server's stderr, from the worker that loads (each worker loads its own copy)."""
    print(f"llmsim: [{os.getpid()}] {line}", file=sys.stderr, flush=True)


class MLXBackend:
    name = "mlx"
    computes = True

    def __init__(self, models: list[LoadedModel]) -> None:
        self.models = {m.alias: m for m in models}

    @property
    def profiles(self) -> list[Profile]:
        return [m.profile for m in self.models.values()]

    def observe(self, observer: QueueObserver) -> None:
        """Report requests waiting for a decode slot (vllm:num_requests_waiting) to `observer`."""
        for loaded in self.models.values():
            loaded.scheduler.observer = observer

    def embed(self, request: EmbedRequest) -> Embedded:
        return Embedded(*embeddings.vectors(self.models[request.model], request.texts))

    def render(self, loaded: LoadedModel, prompt: Prompt, think: bool = True) -> tuple[list[int], bool]:
        """Prompt tokens from the model's chat template, and whether the template opened a thinking block."""
        tools = to_tools(prompt.tools, prompt.tool_choice)
        options: dict[str, Any] = {}
        if thinking_toggle(loaded.tokenizer):
            options["enable_thinking"] = think and prompt.reasoning_effort is not None
        text = loaded.tokenizer.apply_chat_template(to_messages(prompt.turns), tools=tools or None,
                                                    add_generation_prompt=True, tokenize=False, **options)
        markers = think_markers(loaded.tokenizer)
        opened = markers is not None and text.rstrip().endswith(markers[0])
        return loaded.tokenizer.encode(text, add_special_tokens=False), opened

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        loaded = self.models[prompt.model]
        schema = schema_of(prompt.text_format)  # constrained output: no thinking, no tool markup
        tokens, opened = self.render(loaded, prompt, think=schema is None)
        room = loaded.profile.context_window - len(tokens)
        if room <= 0:
            raise ValueError(f"the prompt has {len(tokens)} tokens; the context window is "
                             f"{loaded.profile.context_window}")
        parser = OutputParser(think=think_markers(loaded.tokenizer) if schema is None else None, in_think=opened,
                              tools=bool(prompt.tools) and schema is None, summary=prompt.reasoning_summary)
        processors = make_processors(loaded, prompt)
        if schema is not None:
            processors.append(SchemaProcessor(loaded.lltokenizer, schema))
        cache, reused = loaded.cache.take(tokens)
        sequence = Sequence(tokens[reused:], tokens[:reused], cache, min(prompt.max_output_tokens or room, room),
                            make_sampler(loaded, prompt), processors)
        detokenizer = loaded.tokenizer.detokenizer
        generated = reasoning = 0
        finish = None
        loaded.scheduler.submit(sequence)
        try:
            while finish is None:
                step = sequence.tokens.get()
                if isinstance(step, BaseException):
                    raise step
                assert isinstance(step, Token)
                generated += 1
                finish = step.finish
                if finish != "stop":  # the end token is not shown
                    detokenizer.add_token(step.token)
                    reasoning += parser.thinking
                if finish is not None:
                    detokenizer.finalize()
                yield from parser.feed(detokenizer.last_segment)
            yield from parser.close()
        finally:
            loaded.scheduler.leave(sequence)
        output = generated - (1 if finish == "stop" else 0)
        reason: FinishReason = "length" if finish == "length" else ("tool_calls" if parser.calls else "stop")
        yield Finish(reason, Usage(len(tokens), output, reasoning, cached_tokens=reused))


def make_sampler(loaded: LoadedModel, prompt: Prompt) -> Any:
    """The request's own sampler: greedy at temperature 0; with a seed, its own random key, so a seeded request
    samples the same tokens whatever else shares the batch."""
    from mlx_lm.sample_utils import apply_min_p, apply_top_k, apply_top_p

    top_k, min_p = loaded.sampling.top_k, loaded.sampling.min_p
    if prompt.temperature == 0 or prompt.seed is None:
        return _shared_sampler(prompt.temperature, prompt.top_p, min_p, top_k)
    import mlx.core as mx

    key = [mx.random.key(prompt.seed % 2**32)]
    scale = 1.0 / prompt.temperature

    def sample(logprobs: Any) -> Any:
        if 0 < prompt.top_p < 1.0:
            logprobs = apply_top_p(logprobs, prompt.top_p)
        if min_p:
            logprobs = apply_min_p(logprobs, min_p)
        if top_k:
            logprobs = apply_top_k(logprobs, top_k)
        key[0], draw = mx.random.split(key[0])
        return mx.random.categorical(logprobs * scale, key=draw)

    return sample


@functools.lru_cache(maxsize=256)
def _shared_sampler(temperature: float, top_p: float, min_p: float, top_k: int) -> Any:
    """One sampler object per setting: a batch whose sequences share it samples in one call, not row by row."""
    from mlx_lm.sample_utils import make_sampler as mlx_sampler

    return mlx_sampler(temperature, top_p, min_p, top_k=top_k)


def make_processors(loaded: LoadedModel, prompt: Prompt) -> list[Any]:
    from mlx_lm.sample_utils import make_logits_processors

    return make_logits_processors(repetition_penalty=loaded.sampling.repetition_penalty,
                                  presence_penalty=prompt.presence_penalty or None,
                                  frequency_penalty=prompt.frequency_penalty or None)


def load(specs: list[ModelSpec], allow_download: bool = False, trust_remote_code: bool = False,
         decode_concurrency: int = DECODE_CONCURRENCY, prompt_concurrency: int = PROMPT_CONCURRENCY) -> MLXBackend:
    return MLXBackend([load_model(spec, allow_download, trust_remote_code, decode_concurrency, prompt_concurrency)
                       for spec in specs])
