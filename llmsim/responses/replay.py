"""A stored response's stream events, built again when someone replays them instead of kept as text.

Most stored responses are never replayed, yet their ~110 serialized events were most of what the store
held. A `Replay` keeps what the events are made of that the final Response does not already hold: the
deltas' boundaries (one string and an array of lengths), the few non-text deltas, and the seed of the
`obfuscation` padding. Running the event builder over them again, with the response's own item ids,
completion time and encrypted reasoning (`Recorded`), gives back the same events, byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from array import array
from collections.abc import Iterable, Iterator
from typing import Any

from llmsim.generation import (
    Delta,
    Finish,
    ReasoningDelta,
    TextAnnotation,
    TextDelta,
    TextRun,
    ToolArgsDelta,
    ToolCallStart,
    ToolItem,
    Usage,
)
from llmsim.responses.events import NO_LOGPROBS, Entropy, EventBuilder, SerializedEvent, dumps_event
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.wire import dumps_plain as compact

TEXT, REASONING, SUMMARY, ARGS, OTHER = "T", "R", "S", "A", "O"
_LITTLE = sys.byteorder == "little"
assert array("I").itemsize == 4, "a replay's lengths are written as 32-bit words"


class Recorded(Entropy):
    """A finished response's own ids, completion time and encrypted reasoning, handed out in order again."""

    def __init__(self, final: dict[str, Any], obfuscation_seed: int) -> None:
        super().__init__(obfuscation_seed)
        self.final = final

    def item_id(self, prefix: str, index: int, parent: str | None = None) -> str:
        return str(self.final["output"][index]["id"])

    def now(self) -> int:
        return int(self.final["completed_at"])

    def encrypted_reasoning(self, index: int) -> str:
        return str(self.final["output"][index]["encrypted_content"])


CUT = "\x00server shutting down"  # a log's failure when the server's shutdown cut it (llmsim/runtime/shutdown.py)


class BackendFailure(Exception):
    """The backend's error, kept as its message: raised again where it was, so the replay fails the same way."""


class DeltaLog:
    """The deltas of one response, compact: text pieces joined with their lengths, other deltas as they are."""

    __slots__ = ("kinds", "lengths", "text", "others", "logprobs", "failure", "_pieces")

    def __init__(self) -> None:
        self.kinds = ""
        self.lengths = array("I")
        self.text = ""
        self.others: list[Delta] = []
        self.logprobs: list[list[dict[str, Any]]] | None = None  # per text piece, only when any has some
        self.failure: str | None = None
        self._pieces: list[tuple[str, str, list[dict[str, Any]]] | TextRun] | None = []

    def recording(self, deltas: Iterable[Delta]) -> Iterator[Delta]:
        """`deltas` passed through, each noted; `seal` when they are done."""
        pieces = self._pieces
        assert pieces is not None, "a DeltaLog records once"
        others = self.others
        try:
            for delta in deltas:
                kind = type(delta)
                if kind is TextDelta:
                    pieces.append((TEXT, delta.text, delta.logprobs))  # type: ignore[union-attr]
                elif kind is TextRun:
                    pieces.append(delta)  # type: ignore[arg-type]  # kept whole: `seal` packs it in one go
                elif kind is ToolArgsDelta:
                    pieces.append((ARGS, delta.text, []))  # type: ignore[union-attr]
                elif kind is ReasoningDelta and delta.text and not delta.summary:  # type: ignore[union-attr]
                    pieces.append((REASONING, delta.text, []))  # type: ignore[union-attr]
                elif kind is ReasoningDelta and delta.summary and not delta.text:  # type: ignore[union-attr]
                    pieces.append((SUMMARY, delta.summary, []))  # type: ignore[union-attr]
                else:
                    pieces.append((OTHER, "", []))
                    others.append(delta)
                yield delta
        except ShuttingDown:  # replayed as the same cut, not as a failure of the model
            self.failure = CUT
            raise
        except Exception as exc:
            self.failure = str(exc)
            raise

    def seal(self) -> DeltaLog:
        """Pack what was recorded into its compact form."""
        pieces, self._pieces = self._pieces or [], None
        kinds: list[str] = []
        texts: list[str] = []
        said_any = False  # most answers have no logprobs: their per-piece list is then never built
        for piece in pieces:
            if type(piece) is TextRun:
                kinds.append(TEXT * len(piece.chunks))
                texts += [text for text, _ in piece.chunks]
                continue
            kind, text, said = piece  # type: ignore[misc]
            kinds.append(kind)
            if kind != OTHER:
                texts.append(text)
                said_any = said_any or bool(said)
        self.kinds = "".join(kinds)
        self.lengths = array("I", map(len, texts))
        self.text = "".join(texts)
        if said_any:
            self.logprobs = _logprobs(pieces)
        return self

    def deltas(self) -> Iterator[Delta]:
        """The recorded deltas again (token counts aside: events do not show them)."""
        others, lengths, text, logprobs = iter(self.others), iter(self.lengths), self.text, self.logprobs
        start = piece = 0
        for kind in self.kinds:
            if kind == OTHER:
                yield next(others)
                continue
            end = start + next(lengths)
            chunk, start = text[start:end], end
            if kind == TEXT:
                yield TextDelta(chunk, logprobs=logprobs[piece] if logprobs is not None else [])
            elif kind == ARGS:
                yield ToolArgsDelta(chunk)
            elif kind == REASONING:
                yield ReasoningDelta(text=chunk)
            else:
                yield ReasoningDelta(summary=chunk)
            piece += 1
        if self.failure == CUT:
            raise ShuttingDown()
        if self.failure is not None:
            raise BackendFailure(self.failure)


def _logprobs(pieces: list[tuple[str, str, list[dict[str, Any]]] | TextRun]) -> list[list[dict[str, Any]]]:
    """Each text piece's logprobs, in order (a TextRun's chunks have none)."""
    out: list[list[dict[str, Any]]] = []
    for piece in pieces:
        if type(piece) is TextRun:
            out += [NO_LOGPROBS] * len(piece.chunks)
        elif piece[0] != OTHER:  # type: ignore[index]
            out.append(piece[2])  # type: ignore[index]
    return out


_OTHERS: dict[str, type[Any]] = {kind.__name__: kind for kind in (ToolCallStart, ToolItem, TextAnnotation, Finish,
                                                                   ReasoningDelta, TextDelta, ToolArgsDelta)}


def _encode_delta(delta: Delta) -> dict[str, Any]:
    return {"t": type(delta).__name__, **_plain(delta)}


def _plain(value: Any) -> Any:
    """`dataclasses.asdict` without its deep copies (the result is only serialized), field names looked up once."""
    if type(value) in _SCALARS:
        return value
    names = _FIELDS.get(type(value))
    if names is None:
        if isinstance(value, (list, tuple)):
            return [_plain(v) for v in value]
        if isinstance(value, dict):
            return {k: _plain(v) for k, v in value.items()}
        if not dataclasses.is_dataclass(value) or isinstance(value, type):
            return value
        names = _FIELDS[type(value)] = tuple(f.name for f in dataclasses.fields(value))
    return {name: _plain(getattr(value, name)) for name in names}


_FIELDS: dict[type, tuple[str, ...]] = {}
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _decode_delta(data: dict[str, Any]) -> Delta:
    fields = {key: value for key, value in data.items() if key != "t"}
    kind = _OTHERS[data["t"]]
    if kind is Finish:
        fields["usage"] = Usage(**fields["usage"])
    elif kind is ToolItem:
        fields["partial_images"] = tuple(fields.get("partial_images", ()))
    return kind(**fields)


class Replay:
    """How to build a stored response's events again."""

    __slots__ = ("log", "obfuscate", "encrypted_reasoning", "obfuscation_seed")

    def __init__(self, log: DeltaLog, builder: EventBuilder) -> None:
        self.log = log.seal()
        self.obfuscate = builder.obfuscate
        self.encrypted_reasoning = builder.encrypted_reasoning
        self.obfuscation_seed = builder.entropy.obfuscation_seed

    def dump(self) -> str:
        """The replay as one JSON value, for a store other processes read (Redis): a few hundred bytes where the
        events would be tens of kilobytes. The lengths go as hex: of bytes (`1:` first) when every piece is
        shorter than 256 characters, as a token's text is, else of little-endian 32-bit words; JSON writes a
        list of numbers ~30 times slower (a JSON answer's store write makes one)."""
        log = self.log
        words = log.lengths
        raw = words.tobytes()
        if _LITTLE and not (raw[1::4] + raw[2::4] + raw[3::4]).strip(b"\0"):  # every piece under 256: low bytes
            lengths = "1:" + raw[::4].hex()
        elif not _LITTLE and (not words or max(words) < 256):
            lengths = "1:" + array("B", words).tobytes().hex()
        else:
            if not _LITTLE:
                words = array("I", words)
                words.byteswap()
            lengths = words.tobytes().hex()
        return compact([log.kinds, lengths, log.text, [_encode_delta(d) for d in log.others], log.logprobs,
                        log.failure, self.obfuscate, self.encrypted_reasoning, self.obfuscation_seed])

    @classmethod
    def load(cls, text: str | bytes) -> Replay:
        """A replay as `dump` wrote it."""
        kinds, lengths, joined, others, logprobs, failure, obfuscate, encrypted, seed = json.loads(text)
        log = DeltaLog()
        log._pieces = None  # sealed: it records nothing more
        log.kinds, log.text = kinds, joined
        if isinstance(lengths, str) and lengths.startswith("1:"):
            log.lengths = array("I", array("B", bytes.fromhex(lengths[2:])))
        elif isinstance(lengths, str):
            log.lengths = array("I", bytes.fromhex(lengths))
            if not _LITTLE:
                log.lengths.byteswap()
        else:  # as written before the lengths were hex
            log.lengths = array("I", lengths)
        log.others = [_decode_delta(other) for other in others]
        log.logprobs, log.failure = logprobs, failure
        replay = cls.__new__(cls)
        replay.log, replay.obfuscate = log, obfuscate
        replay.encrypted_reasoning, replay.obfuscation_seed = encrypted, seed
        return replay

    def events(self, final: dict[str, Any]) -> list[SerializedEvent]:
        """The events of the response that ended as `final`, serialized as they were sent."""
        start = {**final, "status": "in_progress", "output": [], "usage": None, "completed_at": None,
                 "incomplete_details": None, "error": None}  # as new_response made it: what the builder changes
        builder = EventBuilder(start, encrypted_reasoning=self.encrypted_reasoning, obfuscate=self.obfuscate,
                               entropy=Recorded(final, self.obfuscation_seed))
        return [(event["type"], dumps_event(event)) for event in builder.events(self.log.deltas())]
