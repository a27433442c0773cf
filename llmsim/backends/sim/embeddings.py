"""The simulator's embeddings: deterministic vectors in which texts that share words and phrases are close.

A text's features are its words (lower-cased, a plural's `s` dropped), its word pairs and its words' character
trigrams, each weighted by one plus the log of its count (English stop words count a tenth). Each feature lands, with a
sign, in a few of the vector's places chosen by a keyed hash (a sparse random projection: inner products are kept
in expectation); random signs and an orthogonal Hartley transform then spread every feature over all the places,
so the vector is dense like a model's while cosines stay what the features make them. The hash key is the model and
the seed: the same text, model and seed give the same vector in any process; another model or seed another space.

A retriever then finds the document that shares the question's words ("capital of France" → "Paris is the capital
of France"), which is what a RAG test needs; synonyms and paraphrases are not close, as they would be with a model.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

WORD = re.compile(r"\w+", re.UNICODE)
STOP_WORDS = frozenset(
    "a an and are as at be by can do does for from had has have how i if in is it its of on or that the this to "
    "was were what when where which who why will with you your".split())
STOP_WEIGHT = 0.1
PAIR_WEIGHT = 0.7  # a shared phrase counts beyond its words
TRIGRAM_WEIGHT = 0.25  # spelling: "embed" is near "embedding"
PLACES = 4  # places one feature lands in
DEFAULT_SIZE = 1536  # a model with no embedding size in its profile (text-embedding-3-small's)
CACHED = 32_768  # features (and words' trigrams) whose hashes are kept: a corpus's words repeat
MAX_CHARS = 100_000  # of one text, read for features (the surfaces bound a text by its tokens first)


def _stem(word: str) -> str:
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@functools.lru_cache(maxsize=CACHED)
def _trigrams(word: str) -> tuple[str, ...]:
    padded = f"<{word}>"
    return tuple("c:" + padded[i:i + 3] for i in range(len(padded) - 2))


def features(text: str) -> Counter[str]:
    """The features of `text` and their counts: words, word pairs, character trigrams."""
    words = [_stem(w) for w in WORD.findall(text[:MAX_CHARS].lower())]
    content = [w for w in words if w not in STOP_WORDS]
    found = ["w:" + word for word in words]
    for word in content:
        found.extend(_trigrams(word))
    found.extend(f"p:{first} {second}" for first, second in zip(content, content[1:], strict=False))
    return Counter(found)


@functools.lru_cache(maxsize=CACHED)
def _feature(name: str, key: bytes) -> tuple[bytes, float]:
    """A feature's keyed hash (PLACES little-endian 32-bit words: their remainders are its places, their top bits
    its signs) and its weight for one occurrence."""
    digest = hashlib.blake2b(name.encode(), key=key, digest_size=4 * PLACES).digest()
    kind = name[0]
    weight = PAIR_WEIGHT if kind == "p" else TRIGRAM_WEIGHT if kind == "c" else \
        STOP_WEIGHT if name[2:] in STOP_WORDS else 1.0
    return digest, weight


def _key(model: str, seed: int | None) -> bytes:
    return hashlib.blake2b(f"{model}\0{seed or 0}".encode(), digest_size=32).digest()


@functools.lru_cache(maxsize=16)
def _signs(key: bytes, size: int) -> np.ndarray:
    import numpy as np

    return np.random.default_rng(int.from_bytes(key[:8], "little")).choice((-1.0, 1.0), size)


def embed(text: str, model: str, size: int, seed: int | None = None) -> np.ndarray:
    """A unit vector of `size` float32s for `text` (an empty text gets a fixed one)."""
    import numpy as np  # here, not at import: only a worker that embeds pays for numpy

    key = _key(model, seed)
    counts = features(text) or Counter({"e:" + text[:64]: 1})  # no words: the characters themselves
    made = [_feature(name, key) for name in counts]
    words = np.frombuffer(b"".join(digest for digest, _ in made), dtype="<u4").reshape(len(made), PLACES)
    weights = np.array([weight for _, weight in made]) * (1.0 + np.log(np.fromiter(counts.values(), float)))
    signed = np.where(words & 0x80000000, 1.0, -1.0) * weights[:, None]
    sparse = np.bincount((words % size).ravel(), weights=signed.ravel(), minlength=size)
    spread = np.fft.fft(sparse * _signs(key, size))
    dense = spread.real - spread.imag  # the Hartley transform: orthogonal (up to a scale the norm removes)
    norm = float(np.linalg.norm(dense)) or 1.0
    return (dense / norm).astype(np.float32)
