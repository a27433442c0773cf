"""Build MLX models on disk with no download: for the tests (tiny) and the bench (realistic size).

Two kinds share one locally trained byte-level BPE tokenizer and a Qwen-style chat
template with tools and thinking:
- `build_random_model`: a real qwen2 architecture with random weights;
- `build_scripted_model`: a model file (loaded with trust_remote_code) whose logits
  force a scripted text, chosen by a trigger token in the prompt. It lets tests drive
  the real generation path with output (tool calls, thinking) a random model never writes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>",
                  "</tool_call>"]

CHAT_TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions. Function signatures are inside <tools></tools>:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for message in messages %}
{%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{% elif message.role == 'assistant' %}<|im_start|>assistant
{{ message.content or '' }}
{%- for call in message.tool_calls or [] %}
<tool_call>
{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}
</tool_call>
{%- endfor %}<|im_end|>
{% elif message.role == 'tool' %}<|im_start|>user
<tool_response>
{{ message.content }}
</tool_response><|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{% endif %}"""

_CORPUS = [
    "The quick brown fox jumps over the lazy dog. Paris is the capital of France.",
    "What is the weather like in Paris today? It is sunny and warm, about 21 degrees.",
    "Let me think about this step by step. First, the user asks for the weather.",
    '{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}',
    "You may call one or more functions. Function signatures are inside tools tags.",
    "system user assistant tool response function name arguments description parameters",
    "0123456789 []{}():;,.!?-_+=*/\\\"' \n\t abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ",
]

# The scripted model: logits that force script[trigger] token by token, then the end token.
_SCRIPTED_MODEL = '''\
"""A test model whose output is a script chosen by a trigger token in the prompt."""

from dataclasses import dataclass, field

import mlx.core as mx
import mlx.nn as nn
from mlx_lm.models.base import BaseModelArgs
from mlx_lm.models.cache import KVCache


@dataclass
class ModelArgs(BaseModelArgs):
    model_type: str
    vocab_size: int
    eos_token_id: int
    scripts: dict = field(default_factory=dict)
    default_script: list = field(default_factory=list)


class Model(nn.Module):
    """Stateless: each row's history is kept in its KV cache (key = token id + 1, value = 1 for a token fed in
    a prompt chunk, 2 for one fed alone), so rows can be batched, filtered and reused across turns.
    The script follows the last trigger in the newest prompt; its position is the count of tokens fed alone
    since then, less one (the prompt's last token is fed alone too)."""

    def __init__(self, args: ModelArgs):
        super().__init__()
        self.args = args
        self.bias = mx.zeros((1,))
        self.scripts = {int(k): v for k, v in args.scripts.items()}
        self.layers = [None]

    def make_cache(self):
        return [KVCache()]

    def __call__(self, inputs, cache=None, **_):
        batch, length = inputs.shape
        kind = 1.0 if length > 1 else 2.0
        keys = (inputs.astype(mx.float32) + 1.0).reshape(batch, 1, length, 1)
        values = mx.full((batch, 1, length, 1), kind)
        keys, values = cache[0].update_and_fetch(keys, values)
        rows = []
        for b, (ids, kinds) in enumerate(zip(keys[:, 0, :, 0].tolist(), values[:, 0, :, 0].tolist())):
            history = [(int(i) - 1, int(k)) for i, k in zip(ids, kinds) if k > 0]
            alone = 0
            while alone < len(history) and history[-1 - alone][1] == 2:
                alone += 1
            newest = [t for t, _ in history[len(history) - alone - self._chunk(history, alone):]]
            triggers = [t for t in newest if t in self.scripts]
            script = self.scripts[triggers[-1]] if triggers else self.args.default_script
            position = alone - 1
            target = script[position] if 0 <= position < len(script) else self.args.eos_token_id
            rows.append(mx.where(mx.arange(self.args.vocab_size) == target, 0.0, -1e9))
        logits = mx.stack(rows)[:, None, :] + self.bias
        return mx.broadcast_to(logits, (batch, length, self.args.vocab_size))

    @staticmethod
    def _chunk(history, alone):
        """The prompt chunk fed before the run of single tokens."""
        n = 0
        while n + alone < len(history) and history[-1 - alone - n][1] == 1:
            n += 1
        return n
'''


def _byte_chars() -> list[str]:
    """GPT-2's byte → printable character map, which byte-level BPE vocabularies are written in."""
    shown = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars, extra = {}, 0
    for byte in range(256):
        if byte in shown:
            chars[byte] = chr(byte)
        else:
            chars[byte] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def _full_bpe(vocab_size: int) -> Any:
    """A byte-level BPE of a real model's size: every byte, then pairs and triples of printable ASCII.

    A few sentences cannot train that many merges, and the bench needs a realistic vocabulary
    (the embedding and output layers are a large share of a small model's work). ASCII merges
    keep a random model's output valid UTF-8, so it streams token by token like a real one."""
    from tokenizers import Tokenizer, models

    chars = _byte_chars()
    vocab = {c: i for i, c in enumerate(chars)}
    ascii_chars = chars[32:127]
    merges: list[tuple[str, str]] = []
    wanted = vocab_size - len(SPECIAL_TOKENS)
    pairs = [a + b for a in ascii_chars for b in ascii_chars]
    for pair in pairs:
        vocab[pair] = len(vocab)
        merges.append((pair[0], pair[1]))
    for pair in pairs:
        for c in ascii_chars:
            if len(vocab) >= wanted:
                break
            vocab[pair + c] = len(vocab)
            merges.append((pair, c))
    return Tokenizer(models.BPE(vocab=vocab, merges=merges))


def build_tokenizer(path: Path, extra_tokens: Sequence[str] = (), vocab_size: int = 512) -> Any:
    """A byte-level BPE (trained on a few sentences when small) in tokenizer.json and tokenizer_config.json."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    special = SPECIAL_TOKENS + list(extra_tokens)
    if vocab_size > 4096:
        tokenizer = _full_bpe(vocab_size)
        tokenizer.add_special_tokens(special)
    else:
        tokenizer = Tokenizer(models.BPE())
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=special,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    if vocab_size <= 4096:
        tokenizer.train_from_iterator(_CORPUS * 4, trainer)
    path.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(path / "tokenizer.json"))
    config = {"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>", "pad_token": "<|endoftext|>",
              "bos_token": None, "model_max_length": 32768, "chat_template": CHAT_TEMPLATE}
    (path / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return tokenizer


def _qwen2_config(vocab_size: int, size: str) -> dict[str, Any]:
    shapes = {  # hidden, layers, heads, kv heads, intermediate
        "tiny": (64, 2, 4, 2, 128),
        "small": (256, 4, 4, 2, 512),  # with a full vocabulary: checks the bench quickly on a CPU
        "0.5b": (896, 24, 14, 2, 4864),  # Qwen2.5-0.5B's shape
    }
    hidden, layers, heads, kv_heads, intermediate = shapes[size]
    return {
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "vocab_size": vocab_size,
        "hidden_size": hidden, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv_heads, "intermediate_size": intermediate, "rms_norm_eps": 1e-6,
        "rope_theta": 1_000_000.0, "max_position_embeddings": 32768, "tie_word_embeddings": True,
        "eos_token_id": None, "torch_dtype": "bfloat16",
    }


def build_random_model(path: Path, size: str = "tiny", seed: int = 0) -> Path:
    """A qwen2 model with random weights: `tiny` for tests, `0.5b` (Qwen2.5-0.5B's shape, bf16) for the bench."""
    import mlx.core as mx
    from mlx_lm.models import qwen2
    from mlx_lm.utils import save_model

    tokenizer = build_tokenizer(path, vocab_size=512 if size == "tiny" else 151_936)
    config = _qwen2_config(tokenizer.get_vocab_size(), size)
    config["eos_token_id"] = tokenizer.token_to_id("<|im_end|>")
    mx.random.seed(seed)
    model = qwen2.Model(qwen2.ModelArgs.from_dict(config))
    if size == "0.5b":
        model.set_dtype(mx.bfloat16)
    save_model(path, model)
    (path / "config.json").write_text(json.dumps(config, indent=2))
    return path


def build_scripted_model(path: Path, scripts: dict[str, str], default: str = "Hello there.") -> Path:
    """A model that writes `scripts[trigger]` when the prompt holds the special token `trigger`."""
    import mlx.core as mx

    tokenizer = build_tokenizer(path, extra_tokens=list(scripts))

    def encode(text: str) -> list[int]:
        return tokenizer.encode(text, add_special_tokens=False).ids

    eos = tokenizer.token_to_id("<|im_end|>")
    config = {
        "model_type": "scripted", "model_file": "scripted.py", "vocab_size": tokenizer.get_vocab_size(),
        "eos_token_id": eos, "max_position_embeddings": 4096,
        "scripts": {str(tokenizer.token_to_id(trigger)): encode(text) for trigger, text in scripts.items()},
        "default_script": encode(default),
    }
    (path / "config.json").write_text(json.dumps(config, indent=2))
    (path / "scripted.py").write_text(_SCRIPTED_MODEL)
    mx.save_safetensors(str(path / "model.safetensors"), {"bias": mx.zeros((1,))})
    return path

