"""Real local generation with MLX / mlx-lm behind the same Prompt → Deltas contract as the simulator.

Each loaded model owns one native worker thread (a gevent ThreadPool of size one):
every token step runs there, so the server's event loop keeps serving other
clients while the model computes, and MLX always sees the same thread. A
cooperative lock per model queues concurrent requests; a request that stops
being read (client gone) stops generating at the next token.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gevent.lock import Semaphore
from gevent.threadpool import ThreadPool

from llmsim.backends.base import Delta, Finish, Prompt, Usage
from llmsim.backends.mlx.cache import PromptCache
from llmsim.backends.mlx.chat import to_messages, to_tools
from llmsim.backends.mlx.models import ModelSpec, resolve
from llmsim.backends.mlx.parsing import OutputParser, think_markers
from llmsim.backends.mlx.schema import SchemaProcessor, lltokenizer_for, schema_of
from llmsim.timing.profiles import Profile, ReasoningSpec


@dataclass(frozen=True)
class SamplingDefaults:
    """Sampling settings the Responses API has no field for, from the model's generation_config.json."""

    top_k: int = 0
    min_p: float = 0.0
    repetition_penalty: float | None = None

    @classmethod
    def read(cls, path: Path) -> "SamplingDefaults":
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
    lock: Semaphore = field(default_factory=Semaphore)
    worker: ThreadPool = field(default_factory=lambda: ThreadPool(1))

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


def load_model(spec: ModelSpec, allow_download: bool = False, trust_remote_code: bool = False) -> LoadedModel:
    from mlx_lm import load

    path = resolve(spec.source, allow_download)
    model, tokenizer, config = load(str(path), return_config=True, trust_remote_code=trust_remote_code)
    return LoadedModel(spec.alias, path, model, tokenizer, _profile(spec.alias, path, config, tokenizer),
                       SamplingDefaults.read(path), PromptCache(model))


class MLXBackend:
    name = "mlx"

    def __init__(self, models: list[LoadedModel]) -> None:
        self.models = {m.alias: m for m in models}

    @property
    def profiles(self) -> list[Profile]:
        return [m.profile for m in self.models.values()]

    def render(self, loaded: LoadedModel, prompt: Prompt, think: bool = True) -> tuple[list[int], bool]:
        """Prompt tokens from the model's chat template, and whether the template opened a thinking block."""
        tools = to_tools(prompt.tools, prompt.tool_choice)
        options: dict[str, Any] = {}
        if thinking_toggle(loaded.tokenizer):
            options["enable_thinking"] = think and prompt.reasoning_effort is not None
        text = loaded.tokenizer.apply_chat_template(to_messages(prompt.turns), tools=tools or None,
                                                    add_generation_prompt=True, tokenize=False, **options)
        markers = think_markers(loaded.tokenizer)
        opened = bool(markers) and text.rstrip().endswith(markers[0])
        return loaded.tokenizer.encode(text, add_special_tokens=False), opened

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        loaded = self.models[prompt.model]
        loaded.lock.acquire()
        try:
            yield from self._generate(loaded, prompt)
        finally:
            loaded.lock.release()

    def _generate(self, loaded: LoadedModel, prompt: Prompt) -> Iterator[Delta]:
        from mlx_lm import stream_generate
        from mlx_lm.sample_utils import make_logits_processors, make_sampler

        schema = schema_of(prompt.text_format)  # constrained output: no thinking, no tool markup
        tokens, opened = self.render(loaded, prompt, think=schema is None)
        room = loaded.profile.context_window - len(tokens)
        if room <= 0:
            raise ValueError(f"the prompt has {len(tokens)} tokens; the context window is "
                             f"{loaded.profile.context_window}")
        limit = min(prompt.max_output_tokens or room, room)
        parser = OutputParser(think=think_markers(loaded.tokenizer) if schema is None else None, in_think=opened,
                              tools=bool(prompt.tools) and schema is None, summary=prompt.reasoning_summary)
        sampler = make_sampler(prompt.temperature, prompt.top_p, loaded.sampling.min_p,
                               top_k=loaded.sampling.top_k)
        processors = make_logits_processors(repetition_penalty=loaded.sampling.repetition_penalty,
                                            presence_penalty=prompt.presence_penalty or None,
                                            frequency_penalty=prompt.frequency_penalty or None)
        if schema is not None:
            processors.append(SchemaProcessor(loaded.lltokenizer, schema))
        cache, reused = loaded.cache.take(tokens)
        fed = list(tokens)

        def start() -> Iterator[Any]:
            if prompt.seed is not None:
                import mlx.core as mx

                mx.random.seed(prompt.seed % 2**32)
            return stream_generate(loaded.model, loaded.tokenizer, tokens[reused:], limit, sampler=sampler,
                                   logits_processors=processors, prompt_cache=cache)

        stream = loaded.worker.apply(start)
        reasoning = 0
        finish_reason = None
        try:
            while finish_reason is None:
                step = loaded.worker.apply(next, (stream, None))
                if step is None:
                    break
                fed.append(step.token)
                finish_reason = step.finish_reason
                eos = finish_reason == "stop"
                if parser.thinking and not eos:
                    reasoning += 1
                yield from parser.feed(step.text)
            yield from parser.close()
        finally:
            loaded.worker.apply(stream.close)
            loaded.cache.keep(cache, fed)
        output = len(fed) - len(tokens) - (1 if finish_reason == "stop" else 0)
        reason = "length" if finish_reason == "length" else ("tool_calls" if parser.calls else "stop")
        yield Finish(reason, Usage(len(tokens), output, reasoning, cached_tokens=reused))


def load(specs: list[ModelSpec], allow_download: bool = False, trust_remote_code: bool = False) -> MLXBackend:
    return MLXBackend([load_model(spec, allow_download, trust_remote_code) for spec in specs])
