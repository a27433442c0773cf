"""Deltas → Anthropic's stream events and the final Message: the only place that knows their taxonomy.

`message_start`, `ping`, then per content block `content_block_start`, its `content_block_delta`s (`text_delta`,
`thinking_delta` then `signature_delta`, `input_json_delta`) and `content_block_stop`; then `message_delta` (the
stop reason and usage) and `message_stop`. A non-streaming request drains the same events (unrendered) and answers
with `message`. A fault mid-stream ends it with an `error` event (`fail`, `error`: the stand-in protocol
llmsim/chaos/faults.py's StreamFault drives)."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from typing import Any

from llmsim import ids
from llmsim.generation import (
    Delta,
    Finish,
    ReasoningDelta,
    TextDelta,
    TextRun,
    ToolArgsDelta,
    ToolCallStart,
)
from llmsim.messages.envelope import DEFAULT_WORDS
from llmsim.messages.translate import Translated
from llmsim.request import SerializedEvent

STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
DELTA = "content_block_delta"
TEXT_HEAD = '{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":'


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def signature(text: str, message_id: str) -> str:
    """A thinking block's signature: opaque, and the same for the same thinking (clients send it back as is)."""
    digest = hashlib.sha512(f"{message_id}:{text}".encode()).digest()
    return base64.b64encode(digest + hashlib.sha512(digest).digest()).decode()


def tool_use_id(call_id: str) -> str:
    """`toolu_…`, Anthropic's tool_use id form, from the backend's call id."""
    return call_id if call_id.startswith("toolu_") else "toolu_" + call_id.removeprefix("call_")


class MessageBuilder:
    """One Message, built from the backend's deltas; `run` yields its (event type, JSON) pairs, `message` is the
    final object. `render`: serialize the events (a stream); else only their types (nobody reads them)."""

    def __init__(self, translated: Translated, model: str, render: bool) -> None:
        self.translated = translated
        self.render = render
        self.id = ids.new("msg", 24)
        self.input_tokens = translated.prompt.input_tokens  # the backend's count, once it gives one
        self.message: dict[str, Any] = {"id": self.id, "type": "message", "role": "assistant", "model": model,
                                        "content": [], "stop_reason": None, "stop_sequence": None,
                                        "usage": self._usage(0)}
        self.response = {"id": self.id}  # what the metrics read of any builder
        self.block: dict[str, Any] | None = None  # the open block
        self.args = ""  # the open tool_use block's input JSON so far
        self.output_tokens = 0
        self.thinking_tokens = 0
        self.held = ""  # text that could still be the start of a stop sequence
        self.thought: str | None = None  # where the thinking's words come from: "text" or "summary"
        self.stopped: str | None = None

    def _usage(self, output_tokens: int) -> dict[str, Any]:
        cached, input_tokens = self.translated.cached, self.input_tokens
        return {"input_tokens": max(0, input_tokens - cached.read - cached.write),
                "cache_creation_input_tokens": cached.write, "cache_read_input_tokens": cached.read,
                "cache_creation": {"ephemeral_5m_input_tokens": 0 if cached.hour else cached.write,
                                   "ephemeral_1h_input_tokens": cached.write if cached.hour else 0},
                "output_tokens": output_tokens, "service_tier": "standard"}

    def _event(self, kind: str, data: dict[str, Any]) -> SerializedEvent:
        return kind, dumps({"type": kind, **data}) if self.render else ""

    def run(self, deltas: Iterator[Delta]) -> Iterator[SerializedEvent]:
        start = {**self.message, "usage": {**self.message["usage"], "output_tokens": 1}}
        yield self._event("message_start", {"message": start})
        yield self._event("ping", {})
        reason = "end_turn"
        try:
            for delta in deltas:
                if type(delta) is TextRun:
                    yield from self._text(delta.chunks, delta.tokens)
                elif type(delta) is TextDelta:
                    yield from self._text(((delta.text, delta.tokens),), delta.tokens)
                elif isinstance(delta, ReasoningDelta):
                    yield from self._thinking(delta)
                elif isinstance(delta, ToolCallStart):
                    yield from self._open({"type": "tool_use", "id": tool_use_id(delta.call_id), "name": delta.name,
                                           "input": {}})
                elif isinstance(delta, ToolArgsDelta) and self.block is not None and \
                        self.block["type"] == "tool_use":
                    self.output_tokens += delta.tokens
                    self.args += delta.text
                    yield self._event(DELTA, {"index": self._index, "delta": {"type": "input_json_delta",
                                                                               "partial_json": delta.text}})
                elif isinstance(delta, Finish):
                    reason = STOP_REASONS[delta.reason]
                    self._finished(delta)
                if self.stopped is not None:
                    reason = "stop_sequence"
                    break
        finally:
            close = getattr(deltas, "close", None)
            if close is not None:
                close()
        if self.held:
            yield from self._flush_held()
        yield from self._close()
        self.message.update(stop_reason=reason, stop_sequence=self.stopped, usage=self._usage(self.output_tokens))
        yield self._event("message_delta", {"delta": {"stop_reason": reason, "stop_sequence": self.stopped},
                                            "usage": {k: v for k, v in self.message["usage"].items()
                                                      if k not in ("service_tier", "cache_creation")}})
        yield self._event("message_stop", {})

    def _finished(self, finish: Finish) -> None:
        """The backend's usage where it counts better (a real model's tokenizer, its tool-call markup): its input
        tokens, and its output tokens less thinking past the budget (the builder's own count when a stop
        sequence ended the text early)."""
        usage = finish.usage
        self.input_tokens = usage.input_tokens
        if self.stopped is None:
            over = usage.reasoning_tokens - self.thinking_tokens if self.translated.budget is not None else 0
            self.output_tokens = max(self.output_tokens, usage.output_tokens - max(0, over))

    @property
    def _index(self) -> int:
        return len(self.message["content"]) - 1

    def _open(self, block: dict[str, Any]) -> Iterator[SerializedEvent]:
        yield from self._close()
        self.block = block
        self.message["content"].append(block)
        shown = {**block, "text": ""} if block["type"] == "text" else \
            {**block, "thinking": "", "signature": ""} if block["type"] == "thinking" else block
        yield self._event("content_block_start", {"index": self._index, "content_block": shown})

    def _close(self) -> Iterator[SerializedEvent]:
        block = self.block
        if block is None:
            return
        if block["type"] == "thinking":
            block["signature"] = signature(block["thinking"], self.id)
            yield self._event(DELTA, {"index": self._index, "delta": {"type": "signature_delta",
                                                                       "signature": block["signature"]}})
        elif block["type"] == "tool_use":
            try:
                block["input"] = json.loads(self.args) if self.args else {}
            except ValueError:
                block["input"] = {}
            self.args = ""
        yield self._event("content_block_stop", {"index": self._index})
        self.block = None

    def _thinking(self, delta: ReasoningDelta) -> Iterator[SerializedEvent]:
        if self.block is None or self.block["type"] != "thinking":
            yield from self._open({"type": "thinking", "thinking": "", "signature": ""})
        budget = self.translated.budget
        tokens = delta.tokens if budget is None else max(0, min(delta.tokens, budget - self.thinking_tokens))
        self.thinking_tokens += tokens
        self.output_tokens += tokens
        source = "text" if delta.text else "summary"  # a model's own thinking, else the summary of hidden tokens:
        words = delta.text or delta.summary  # a backend that gives both gives the same words twice
        if words and self.thought in (None, source):
            self.thought = source
        if words and self.thought == source and self.translated.show_thinking:
            assert self.block is not None
            self.block["thinking"] += words
            yield self._event(DELTA, {"index": self._index, "delta": {"type": "thinking_delta", "thinking": words}})

    def _text(self, chunks: tuple[tuple[str, int], ...], tokens: int) -> Iterator[SerializedEvent]:
        if self.block is None or self.block["type"] != "text":
            yield from self._open({"type": "text", "text": ""})
        self.output_tokens += tokens
        if self.translated.stops:
            yield from self._stop_checked("".join(text for text, _ in chunks))
            return
        block = self.block
        assert block is not None
        block["text"] += "".join(text for text, _ in chunks)
        if not self.render:
            yield from ((DELTA, "") for _ in chunks)
            return
        head = TEXT_HEAD % self._index
        for text, _ in chunks:  # the hot path of a stream: one dumps of the text, not of the event
            yield DELTA, f"{head}{dumps(text)}}}}}"

    def _stop_checked(self, text: str) -> Iterator[SerializedEvent]:
        """Text up to a stop sequence; what could still begin one is held back until it cannot."""
        stops = self.translated.stops
        pending = self.held + text
        hits = [(pending.find(stop), stop) for stop in stops if stop in pending]
        if hits:
            at, self.stopped = min(hits)
            pending, self.held = pending[:at], ""
        else:
            keep = next((k for k in range(min(max(map(len, stops)) - 1, len(pending)), 0, -1)
                         if any(s.startswith(pending[-k:]) for s in stops)), 0)
            pending, self.held = (pending[:-keep], pending[-keep:]) if keep else (pending, "")
        if pending:
            yield from self._say(pending)

    def _flush_held(self) -> Iterator[SerializedEvent]:
        held, self.held = self.held, ""
        yield from self._say(held)

    def _say(self, text: str) -> Iterator[SerializedEvent]:
        assert self.block is not None
        self.block["text"] += text
        yield self._event(DELTA, {"index": self._index, "delta": {"type": "text_delta", "text": text}})

    # --- how a fault ends the stream (llmsim/chaos/faults.py) -----------------------------------------

    terminal = frozenset({"error"})

    @staticmethod
    def dumps(event: dict[str, Any]) -> str:
        return dumps(event)

    @staticmethod
    def error(code: str, message: str, param: str | None = None) -> dict[str, Any]:
        kind = "overloaded_error" if code == "overloaded" else "api_error"
        return {"type": "error", "error": {"type": kind, "message": DEFAULT_WORDS.get(message, message)}}

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        yield self.error(code, message)
