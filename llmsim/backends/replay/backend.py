"""Answers from cassettes: the recorded events (with their offsets, which the pipeline waits out scaled by
--speed), the recorded JSON body, or the recorded error. A miss errors, falls back to the simulator, or is
forwarded to the upstream and recorded, as --on-miss says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from llmsim.backends import cassette as cassettes
from llmsim.backends.cassette import Cassette
from llmsim.backends.relay import Exchange, Reply, upstream_error
from llmsim.backends.replay.library import Library
from llmsim.backends.sim.backend import SimBackend
from llmsim.config import OnMiss, Settings
from llmsim.generation import Backend, Delta, Embedded, Embedder, EmbedRequest, Prompt

if TYPE_CHECKING:
    from llmsim.backends.proxy.backend import ProxyBackend

FINAL = ("response.completed", "response.incomplete", "response.failed")


class ReplayBackend:
    name = "replay"

    def __init__(self, library: Library, on_miss: OnMiss = "error", fallback: Backend | None = None,
                 proxy: ProxyBackend | None = None) -> None:
        self.library = library
        self.on_miss = on_miss
        self.fallback = fallback  # `--on-miss sim`: the simulator generates, through the usual pipeline
        self.proxy = proxy  # `--on-miss proxy`: a recording ProxyBackend

    @property
    def computes(self) -> bool:
        return self.fallback is not None and self.fallback.computes

    @classmethod
    def from_settings(cls, settings: Settings) -> ReplayBackend:
        if settings.cassettes_dir is None:
            raise ValueError("--backend replay needs --cassettes DIR")
        directory = settings.cassettes_dir
        library = Library(directory, cassettes.load(directory) if directory.is_dir() else [],
                          settings.match)  # type: ignore[arg-type]  # the CLI offers only MATCH_MODES
        fallback = SimBackend(tool_call_rate=settings.tool_call_rate, text_mode=settings.text_mode)
        backend = cls(library, settings.on_miss, fallback)  # type: ignore[arg-type]
        if settings.on_miss == "proxy":
            from llmsim.backends.proxy.backend import ProxyBackend  # httpx only when a miss may go upstream

            recording = replace(settings, record_dir=settings.record_dir or directory)
            backend.proxy = ProxyBackend.from_settings(recording, on_record=library.add)
        return backend

    def relay(self, exchange: Exchange) -> Reply | None:
        cassette = self.library.find(exchange)
        if cassette is not None:
            return play(cassette, exchange)
        if self.on_miss == "sim":
            return None
        if self.on_miss == "proxy" and self.proxy is not None:
            return self.proxy.relay(exchange)
        raise self.library.miss(exchange)

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        if self.fallback is None:
            raise RuntimeError("replay has no fallback backend")
        return self.fallback.generate(prompt)

    def embed(self, request: EmbedRequest) -> Embedded:
        """A miss left to the simulator (`--on-miss sim`): its vectors."""
        if not isinstance(self.fallback, Embedder):
            raise RuntimeError("replay has no fallback backend")
        return self.fallback.embed(request)


def play(cassette: Cassette, exchange: Exchange) -> Reply:
    if cassette.status >= 400:
        raise upstream_error(cassette.status, cassette.body, cassette.headers)
    if exchange.stream:
        return Reply(cassette.status, dict(cassette.headers), events=iter(cassette.events), timed=True)
    if not cassette.stream:
        return Reply(cassette.status, dict(cassette.headers), body=cassette.body, wait=cassette.elapsed)
    # A JSON request answered from a recorded stream: its final response, once the stream would have ended.
    last = next(((t, json.loads(data)) for t, kind, data in reversed(cassette.events) if kind in FINAL), None)
    if last is None:
        raise upstream_error(502, None, {})
    return Reply(cassette.status, dict(cassette.headers), body=last[1]["response"], wait=last[0])
