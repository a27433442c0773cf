"""Deltas → Gemini's GenerateContentResponse chunks and the final response: the only place that knows their shape.

A stream is a run of whole GenerateContentResponse objects, each with the new parts of its candidate (text,
`thought` text, function calls) and the usage so far; the last one carries `finishReason` and the final
`usageMetadata`. A JSON answer is the same parts merged. Candidates (`candidateCount`) come one after the other,
each with its `index`. A fault mid-stream ends it with Google's error envelope as the last chunk (`fail`, `error`:
the stand-in protocol llmsim/chaos/faults.py's StreamFault drives).
"""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from collections.abc import Iterator
from typing import Any

from llmsim.errors import APIError
from llmsim.gemini import envelope
from llmsim.gemini.translate import Translated
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
)
from llmsim.request import SerializedEvent

FINISH_REASONS = {"stop": "STOP", "length": "MAX_TOKENS", "tool_calls": "STOP"}
CHUNK = "candidate.delta"  # a chunk that carries tokens (the metrics time these: llmsim/metrics/meter.py)
PART = "candidate.part"  # a chunk with a whole part (a function call) or thinking
LAST = "candidate.done"  # a candidate's last chunk, with its finishReason
RUN_DELTAS = 8  # a run's text deltas per chunk: Gemini streams a few words at a time, not a token each
THOUGHT_CHUNK = 200  # characters of thinking sent together, at a sentence's end


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def event_dumps(event: dict[str, Any]) -> str:
    """An error event (a stream fault's) as the chunk Google sends: its envelope, without the event's type."""
    return dumps({k: v for k, v in event.items() if k != "type"})


def response_id() -> str:
    """Gemini's response ids: 22 url-safe base64 characters."""
    return base64.urlsafe_b64encode(secrets.token_bytes(16)).decode()[:22]


def thought_signature(seed: str) -> str:
    """An opaque signature for a thinking model's function call (clients send it back as it is)."""
    return base64.b64encode(hashlib.sha256(seed.encode()).digest() * 2).decode()


class GeminiBuilder:
    """One GenerateContentResponse, built from the backend's deltas, candidate by candidate; `candidate` yields a
    candidate's (event type, JSON) pairs, `response` is the final object. `render`: serialize the chunks (a
    stream); else only their types (nobody reads them)."""

    terminal = frozenset({LAST, "error"})  # what ends a stream (llmsim/surface.py `Ending`)

    def __init__(self, translated: Translated, model: str, render: bool) -> None:
        self.translated = translated
        self.render = render
        self.model = model
        self.id = response_id()
        self.prompt_tokens = translated.prompt.input_tokens
        self.output_tokens = 0  # all candidates' visible tokens
        self.thought_tokens = 0
        self.response: dict[str, Any] = {"id": self.id, "candidates": [], "usageMetadata": {},
                                         "modelVersion": model, "responseId": self.id}
        version, rid = dumps(model), dumps(self.id)
        self._tail = ',"index":%d}],"usageMetadata":%s,"modelVersion":' + version + ',"responseId":' + rid + "}"
        self._state = _Candidate(0)

    # --- usage -----------------------------------------------------------------------------------------------

    def usage(self) -> dict[str, Any]:
        usage: dict[str, Any] = {"promptTokenCount": self.prompt_tokens}
        if self.output_tokens:
            usage["candidatesTokenCount"] = self.output_tokens
        usage["totalTokenCount"] = self.prompt_tokens + self.output_tokens + self.thought_tokens
        usage["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": self.prompt_tokens}]
        if self.thought_tokens:
            usage["thoughtsTokenCount"] = self.thought_tokens
        return usage

    def _usage_json(self) -> str:
        thoughts = f',"thoughtsTokenCount":{self.thought_tokens}' if self.thought_tokens else ""
        candidates = f',"candidatesTokenCount":{self.output_tokens}' if self.output_tokens else ""
        total = self.prompt_tokens + self.output_tokens + self.thought_tokens
        return (f'{{"promptTokenCount":{self.prompt_tokens}{candidates},"totalTokenCount":{total},'
                f'"promptTokensDetails":[{{"modality":"TEXT","tokenCount":{self.prompt_tokens}}}]{thoughts}}}')

    def _chunk(self, kind: str, parts: list[dict[str, Any]], finish: str | None = None,
               grounding: dict[str, Any] | None = None) -> SerializedEvent:
        if not self.render:
            return kind, ""
        content = '{"candidates":[{"content":{"parts":' + dumps(parts) + ',"role":"model"}'
        if finish is not None:
            content += ',"finishReason":' + dumps(finish)
        if grounding:
            content += ',"groundingMetadata":' + dumps(grounding)
        return kind, content + self._tail % (self._state.index, self._usage_json())

    # --- a candidate ---------------------------------------------------------------------------------------------

    def candidate(self, index: int, deltas: Iterator[Delta]) -> Iterator[SerializedEvent]:
        state = self._state = _Candidate(index)
        reason = "STOP"
        try:
            for delta in deltas:
                if not isinstance(delta, ReasoningDelta) and state.unsaid:
                    yield from self._said_thoughts()
                if type(delta) is TextRun:
                    yield from self._flush_calls()
                    chunks = delta.chunks
                    for at in range(0, len(chunks), RUN_DELTAS):
                        piece = chunks[at:at + RUN_DELTAS]
                        yield from self._text("".join(text for text, _ in piece), sum(n for _, n in piece))
                elif type(delta) is TextDelta:
                    yield from self._flush_calls()
                    yield from self._text(delta.text, delta.tokens)
                elif isinstance(delta, ReasoningDelta):
                    yield from self._thinking(delta)
                elif isinstance(delta, ToolCallStart):
                    state.calls.append({"name": delta.name, "args": ""})
                elif isinstance(delta, ToolArgsDelta) and state.calls:
                    self.output_tokens += delta.tokens
                    state.calls[-1]["args"] += delta.text
                elif isinstance(delta, ToolItem) and delta.item.get("type") == "web_search_call":
                    state.queries.append(str((delta.item.get("action") or {}).get("query") or ""))
                elif isinstance(delta, TextAnnotation) and delta.annotation.get("type") == "url_citation":
                    state.citations.append(delta.annotation)
                elif isinstance(delta, Finish):
                    reason = FINISH_REASONS[delta.reason]
                    self._finished(delta)
                if state.stopped:
                    reason = "STOP"
                    break
        finally:
            close = getattr(deltas, "close", None)
            if close is not None:
                close()
        yield from self._said_thoughts()
        if state.held and not state.stopped:
            yield from self._say(state.held)
            state.held = ""
        yield from self._flush_calls()
        state.finish = reason
        grounding = self._grounding(state)
        self.response["candidates"].append({**self._whole(state), **({"groundingMetadata": grounding}
                                                                    if grounding else {})})
        self.response["usageMetadata"] = self.usage()
        yield self._chunk(LAST, [{"text": ""}], reason, grounding)

    @staticmethod
    def _grounding(state: _Candidate) -> dict[str, Any] | None:
        """googleSearch's answer: the queries it ran, the pages it cites and which words each supports."""
        if not state.queries and not state.citations:
            return None
        text = "".join(part.get("text", "") for part in state.parts)
        chunks = [{"web": {"uri": note["url"], "title": note.get("title") or note["url"]}} for note in state.citations]
        supports = [{"segment": {"startIndex": note["start_index"], "endIndex": note["end_index"],
                                 "text": text[note["start_index"]:note["end_index"]]}, "groundingChunkIndices": [i]}
                    for i, note in enumerate(state.citations)]
        return {"webSearchQueries": [query for query in state.queries if query], "groundingChunks": chunks,
                "groundingSupports": supports}

    def _whole(self, state: _Candidate) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if state.thought:
            parts.append({"text": state.thought, "thought": True})
        for part in state.parts:
            if "text" in part and parts and "text" in parts[-1] and not parts[-1].get("thought"):
                parts[-1] = {"text": parts[-1]["text"] + part["text"]}
            else:
                parts.append(part)
        candidate: dict[str, Any] = {"content": {"parts": parts or [{"text": ""}], "role": "model"},
                                     "finishReason": state.finish, "index": state.index}
        return candidate

    def _finished(self, finish: Finish) -> None:
        """The backend's input count where it counts better (a real model's tokenizer)."""
        if finish.usage.input_tokens:
            self.prompt_tokens = finish.usage.input_tokens

    def _thinking(self, delta: ReasoningDelta) -> Iterator[SerializedEvent]:
        state = self._state
        budget = self.translated.budget
        tokens = delta.tokens if budget is None else max(0, min(delta.tokens, budget - state.thought_tokens))
        state.thought_tokens += tokens
        self.thought_tokens += tokens
        words = delta.summary or delta.text
        if words and self.translated.show_thoughts:
            state.thought += words
            state.unsaid += words
            if len(state.unsaid) >= THOUGHT_CHUNK and state.unsaid.rstrip().endswith((".", "\n")):
                yield from self._said_thoughts()

    def _said_thoughts(self) -> Iterator[SerializedEvent]:
        """The thinking's words so far, in one chunk: Gemini sends its thought summary a few sentences at a time."""
        state = self._state
        if state.unsaid:
            words, state.unsaid = state.unsaid, ""
            yield self._chunk(PART, [{"text": words, "thought": True}])

    def _text(self, text: str, tokens: int) -> Iterator[SerializedEvent]:
        if self._state.stopped:
            return
        self.output_tokens += tokens
        if self.translated.stops:
            text = self._stop_checked(text)
        if text:
            yield from self._say(text)

    def _say(self, text: str) -> Iterator[SerializedEvent]:
        self._state.parts.append({"text": text})
        yield self._chunk(CHUNK, [{"text": text}])

    def _stop_checked(self, text: str) -> str:
        """Text up to a stop sequence; what could still begin one is held back until it cannot."""
        state, stops = self._state, self.translated.stops
        pending = state.held + text
        hits = [(pending.find(stop), stop) for stop in stops if stop in pending]
        if hits:
            at, _ = min(hits)
            state.stopped, state.held = True, ""
            return pending[:at]
        keep = next((k for k in range(min(max(map(len, stops)) - 1, len(pending)), 0, -1)
                     if any(s.startswith(pending[-k:]) for s in stops)), 0)
        pending, state.held = (pending[:-keep], pending[-keep:]) if keep else (pending, "")
        return pending

    def _flush_calls(self) -> Iterator[SerializedEvent]:
        """The calls made so far, whole, in one chunk (parallel calls are parts of one chunk, as Gemini sends)."""
        state = self._state
        if not state.calls:
            return
        parts: list[dict[str, Any]] = []
        for call in state.calls:
            try:
                args = json.loads(call["args"]) if call["args"] else {}
            except ValueError:
                args = {}
            part: dict[str, Any] = {"functionCall": {"name": call["name"], "args": args}}
            if self.translated.thinks and not parts:
                part["thoughtSignature"] = thought_signature(f"{self.id}:{call['name']}:{call['args']}")
            parts.append(part)
        state.calls = []
        state.parts.extend(parts)
        yield self._chunk(PART, parts)

    # --- how a fault ends the stream (llmsim/chaos/faults.py) ---------------------------------------------------

    @staticmethod
    def dumps(event: dict[str, Any]) -> str:
        return event_dumps(event)

    def error(self, code: str, message: str, param: str | None = None) -> dict[str, Any]:
        status = 503 if code in ("overloaded", "slow_down") else 500
        return {"type": "error", **envelope.body(APIError(message, status=status, type="server_error"),
                                                 self.model)}

    def fail(self, code: str, message: str) -> Iterator[dict[str, Any]]:
        yield self.error(code, message)


class _Candidate:
    def __init__(self, index: int) -> None:
        self.index = index
        self.parts: list[dict[str, Any]] = []
        self.thought = ""
        self.unsaid = ""  # thinking words not yet sent
        self.thought_tokens = 0
        self.calls: list[dict[str, str]] = []
        self.held = ""
        self.stopped = False
        self.queries: list[str] = []  # googleSearch's
        self.citations: list[dict[str, Any]] = []
        self.finish = "STOP"
