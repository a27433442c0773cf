"""Which cassette answers a request: by normalised request (default), exact body, or recorded order.

Replayed responses keep their recorded ids, so a follow-up that names one (`previous_response_id`,
`item_reference`, a `call_id`) is the very request that was recorded after it, and matches its cassette.
"""

from __future__ import annotations

import difflib
import threading
from collections import defaultdict
from pathlib import Path

from llmsim.backends.cassette import Cassette, normalised, request_key
from llmsim.backends.relay import Exchange
from llmsim.config import Mode
from llmsim.errors import APIError
from llmsim.wire import canonical


class Library:
    """The cassettes of a directory, indexed for one matching mode. Several recordings of the same request
    answer in turn, in the order they were recorded."""

    def __init__(self, directory: Path, cassettes: list[Cassette], mode: Mode = "normalised") -> None:
        self.directory = directory
        self.mode = mode
        self.cassettes: list[Cassette] = []
        self._by_key: dict[str, list[Cassette]] = defaultdict(list)
        self._turns: dict[str, int] = defaultdict(int)
        self._next = 0  # sequence mode: the next cassette to play
        self._lock = threading.Lock()
        for cassette in cassettes:
            self.add(cassette)

    def _key(self, endpoint: str, body: dict) -> str:
        return request_key(endpoint, {k: v for k, v in body.items() if k != "stream"}, exact=self.mode == "exact")

    def add(self, cassette: Cassette) -> None:
        with self._lock:
            self.cassettes.append(cassette)
            self._by_key[self._key(cassette.endpoint, cassette.request)].append(cassette)

    def find(self, exchange: Exchange) -> Cassette | None:
        with self._lock:
            if self.mode == "sequence":
                if self._next >= len(self.cassettes) or not playable(self.cassettes[self._next], exchange):
                    return None
                self._next += 1
                return self.cassettes[self._next - 1]
            key = self._key(exchange.endpoint, exchange.body)
            candidates = [c for c in self._by_key.get(key, ()) if playable(c, exchange)]
            if not candidates:
                return None
            turn = self._turns[key]
            self._turns[key] += 1
            return candidates[turn % len(candidates)]

    def miss(self, exchange: Exchange) -> APIError:
        """The error a miss answers with `--on-miss error`: what was asked, and the nearest cassette."""
        wanted = normalised(exchange.endpoint, exchange.body)
        model = exchange.body.get("model")
        message = (f"LLMSim replay: no cassette in {self.directory} matched this {exchange.endpoint} request "
                   f"(model {model!r}, {self.mode} matching, stream={exchange.stream}).")
        if self.mode == "sequence":
            message += f" {self._next} of {len(self.cassettes)} cassettes were played; the next is " + (
                _name(self.cassettes[self._next]) if self._next < len(self.cassettes) else "none") + "."
        else:
            nearest = self.nearest(exchange)
            if nearest is None:
                message += " There is no cassette for this endpoint."
            else:
                have = normalised(nearest.endpoint, nearest.request)
                differs = sorted(name for name in {*wanted, *have} if wanted.get(name) != have.get(name))
                if not differs:
                    differs = ["stream" if nearest.stream != exchange.stream else "other body fields"]
                message += f" Nearest: {_name(nearest)}, which differs in: {', '.join(differs)}."
        return APIError(message, status=404, code="cassette_not_found")

    def nearest(self, exchange: Exchange) -> Cassette | None:
        wanted = normalised(exchange.endpoint, exchange.body)
        text = canonical(wanted)[:4000]

        def score(cassette: Cassette) -> tuple[int, float]:
            have = normalised(cassette.endpoint, cassette.request)
            same = sum(wanted.get(name) == have.get(name) for name in {*wanted, *have})
            return same, difflib.SequenceMatcher(None, text, canonical(have)[:4000]).quick_ratio()

        candidates = [c for c in self.cassettes if c.endpoint == exchange.endpoint]
        return max(candidates, key=score) if candidates else None


def playable(cassette: Cassette, exchange: Exchange) -> bool:
    """A stream answers a stream; a JSON answer answers JSON; a Responses stream also answers JSON (its final
    response), not the other way round."""
    if cassette.endpoint != exchange.endpoint:
        return False
    if cassette.stream == exchange.stream or cassette.status >= 400:
        return True
    return cassette.stream and exchange.surface.json_from_stream


def _name(cassette: Cassette) -> str:
    return cassette.path.name if cassette.path else "(unsaved)"
