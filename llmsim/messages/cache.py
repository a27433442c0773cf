"""Prompt caching as Anthropic bills it: a block marked `cache_control` ends a prefix (tools, then system, then
messages, in that order); a later request with the same prefix reads it from the cache instead of paying it as
input. The cache is a server's (`Pipeline.kept`: servers in one process, as in the tests, share none), bounded,
with Anthropic's lifetimes (5 minutes, or 1 hour), refreshed on use: the usage a client sees
(`cache_creation_input_tokens`, `cache_read_input_tokens`) is the point, not storage."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

from llmsim import tokens
from llmsim.messages.counting import corrected
from llmsim.messages.schema import CountTokensRequest, DocumentBlock, ImageBlock, TextBlock
from llmsim.responses.translate import IMAGE_TOKENS

MIN_TOKENS = 1024  # the shortest prefix Anthropic caches (Sonnet and Opus; shorter prefixes are not cached)
MAX_ENTRIES = 10_000
TTL = {"5m": 300.0, "1h": 3600.0}
KEPT = "messages.prompt_cache"  # its key in `Pipeline.kept`
Entries = dict[str, float]  # prefix key → when it expires (insertion order: least recently used first)


@dataclass(frozen=True)
class Use:
    read: int = 0  # cache_read_input_tokens
    write: int = 0  # cache_creation_input_tokens
    hour: bool = False  # written for an hour (`ttl: 1h`), else for 5 minutes


@dataclass(frozen=True)
class Point:
    digest: str
    tokens: int
    ttl: float


def breakpoints(request: CountTokensRequest, encoding: str) -> list[Point]:
    """Every marked prefix: its digest and its tokens. A top-level `cache_control` marks the last block that can
    carry one (the SDK's "mark the last cacheable block")."""
    digest = hashlib.sha256()
    count = 0
    points: list[Point] = []
    system = [request.system] if isinstance(request.system, str) else request.system or []
    blocks: list[Any] = [*(request.tools or []), *system]
    for message in request.messages:
        blocks.extend([message.content] if isinstance(message.content, str) else message.content)
    last = max((at for at, block in enumerate(blocks) if isinstance(block, str) or
                "cache_control" in type(block).model_fields), default=None) if request.cache_control else None
    if last is None and not any(getattr(block, "cache_control", None) for block in blocks):
        return points  # nothing marked: nothing to digest or count
    for at, block in enumerate(blocks):
        data = block if isinstance(block, str) else \
            block.model_dump(exclude={"cache_control"}, exclude_none=True, by_alias=True)
        digest.update(json.dumps(data, sort_keys=True).encode())
        if isinstance(block, ImageBlock | DocumentBlock):  # an image's tokens are its size's, not its bytes' text
            count += IMAGE_TOKENS["auto"]
        else:
            count += tokens.count(block if isinstance(block, str) else block.text if isinstance(block, TextBlock)
                                  else json.dumps(data, sort_keys=True), encoding)
        control = getattr(block, "cache_control", None) or (request.cache_control if at == last else None)
        if control is not None:
            points.append(Point(digest.hexdigest(), corrected(count), TTL[control.ttl or "5m"]))
    return points


def lookup(entries: Entries, points: list[Point], owner: str, model: str, input_tokens: int) -> Use:
    """What this request reads from the cache `entries` and writes to it; its prefixes are (again) cached after."""
    now = time.monotonic()
    read, longest, hour = 0, 0, False
    for point in points:
        if point.tokens < MIN_TOKENS:
            continue
        key = f"{owner}:{model}:{point.digest}"
        expires = entries.pop(key, None)
        if expires is not None and expires > now:
            read = max(read, point.tokens)
        if point.tokens > longest:
            longest, hour = point.tokens, point.ttl > TTL["5m"]
        entries[key] = now + point.ttl
    while len(entries) > MAX_ENTRIES:
        del entries[next(iter(entries))]
    read = min(read, input_tokens)
    return Use(read=read, write=max(0, min(longest, input_tokens) - read), hour=hour)
