"""Deltas → typed Responses stream events and the final Response object.

This is the only module that knows the event taxonomy. Every transport drains
the same events: non-streaming keeps the final Response, SSE and WebSocket
serialize each event as it comes.

Events hold references into the response, not copies: a consumer serializes each event (or drops it)
before it asks for the next one, so what it writes is the state at that event.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import random
import re
import secrets
import time
from array import array
from binascii import b2a_base64
from collections.abc import Iterable, Iterator
from itertools import repeat
from typing import Any, cast

from llmsim import ids, wire
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
from llmsim.runtime.shutdown import ShuttingDown
from llmsim.runtime.waits import ClientGone
from llmsim.shared.events import PACED_TEXT, PacedEvent, PacedText, SerializedEvent, dumps

Event = dict[str, Any]
log = logging.getLogger("llmsim")
TEXT_DELTA = "response.output_text.delta"
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})
CANCELLED = "response.incomplete"  # the terminal event of a cancelled response
# Events after which a stored snapshot of a running response is refreshed (not every delta: that is O(n²)).
SNAPSHOT = TERMINAL | {"response.created", "response.queued", "response.in_progress", "response.output_item.added",
                       "response.output_item.done"}
# Built-in tool items: id prefix, events before the streamed field, the streamed field and its event
# prefix, events after it. Each event is `response.<type>.<phase>` with item_id and output_index.
HOSTED = {
    "web_search_call": ("ws", ("in_progress", "searching"), None, ("completed",)),
    "file_search_call": ("fs", ("in_progress", "searching"), None, ("completed",)),
    "code_interpreter_call": ("ci", ("in_progress",), ("code", "response.code_interpreter_call_code"),
                              ("interpreting", "completed")),
    "image_generation_call": ("ig", ("in_progress", "generating"), None, ("completed",)),
    "mcp_list_tools": ("mcpl", ("in_progress",), None, ("completed",)),
    "mcp_call": ("mcp", ("in_progress",), ("arguments", "response.mcp_call_arguments"), ("completed",)),
    "mcp_approval_request": ("mcpr", (), None, ()),
}
HOSTED_RESULTS = ("results", "outputs", "result", "output")  # null until the call completes
STATUSED = {"web_search_call", "file_search_call", "code_interpreter_call", "image_generation_call", "mcp_call"}
NO_LOGPROBS: list[dict[str, Any]] = []  # a TextRun's chunks have none: read, never changed
STREAM_CHUNK = 24  # characters per delta of a built-in item's streamed field
_EIGHTS = re.compile(".{8}")  # a padding's 8 characters, each in turn
_URLSAFE = bytes.maketrans(b"+/", b"-_")  # base64.urlsafe_b64encode's alphabet, without its two calls per delta


class Entropy:
    """What a response's events carry that is not in its deltas: item ids, the completion time, encrypted
    reasoning and the `obfuscation` padding. Fresh by default; `Recorded` (llmsim/responses/replay.py) gives
    back a stored response's own, so its events can be built again when someone replays them."""

    def __init__(self, obfuscation_seed: int | None = None) -> None:
        self.obfuscation_seed = int.from_bytes(os.urandom(8)) if obfuscation_seed is None else obfuscation_seed
        self._padding: random.Random | None = None  # a seeded PRNG, made when first needed: no os.urandom per delta

    def item_id(self, prefix: str, index: int, parent: str | None = None) -> str:
        """`parent`: the id of the item this one depends on, which its id then names (see `ids.child`)."""
        return ids.child(prefix, parent) if parent else ids.new(prefix)

    def now(self) -> int:
        return int(time.time())

    def encrypted_reasoning(self, index: int) -> str:
        return "gAAAAA" + secrets.token_urlsafe(96)

    def obfuscation(self) -> str:
        return self.obfuscations(1)[0]

    def obfuscations(self, count: int) -> list[str]:
        """The next `count` paddings: 6 random bytes each, in base64 8 characters with no `=`, so the padding of
        all of them encoded at once and cut every 8 characters is each one's."""
        if self._padding is None:
            self._padding = random.Random(self.obfuscation_seed)
        # randbytes(6) is getrandbits(48): two 32-bit words, the first whole and the top half of the second, in
        # little-endian bytes. Drawn for all at once, the words come in the same order: each 8 bytes are one
        # padding's 6 with the second word's low half (the 5th and 6th bytes) to drop.
        words = array("H", self._padding.getrandbits(64 * count).to_bytes(8 * count, "little"))
        del words[2::4]
        text = b2a_base64(words.tobytes(), newline=False).translate(_URLSAFE).decode()
        return _EIGHTS.findall(text)


class EventBuilder:
    """Feeds deltas into `response` (a Response dict) and yields the events a client sees (the Responses
    surface's Builder, llmsim/surface.py)."""

    terminal = TERMINAL
    dumps = staticmethod(dumps)

    def __init__(self, response: dict[str, Any], *, encrypted_reasoning: bool = False,
                 obfuscate: bool = False, entropy: Entropy | None = None, quiet: bool = False,
                 render: bool = False) -> None:
        self.response = response
        self.encrypted_reasoning = encrypted_reasoning
        self.obfuscate = obfuscate
        self.quiet = quiet  # nobody reads the text deltas' events (a JSON answer): the response grows, no event
        # The events are sent as they come: a TextRun's deltas come already serialized (a SerializedEvent, not an
        # Event), the other events as dicts for `dumps_event`.
        self.render = render
        # The transport sends a rendered run's text deltas itself (a PacedText): each when due, or all at once.
        self.whole_runs = False
        self.entropy = entropy or Entropy()
        self.sequence = 0
        self.item: dict[str, Any] | None = None
        self.finish: Finish | None = None

    # --- public -------------------------------------------------------------------------------

    def run(self, deltas: Iterable[Delta]) -> Iterator[Event | SerializedEvent | PacedEvent]:
        """All events of one response: created, in_progress, items, then exactly one terminal event.

        A queued builder (see `queue`) has sent `response.created` already and starts at in_progress. Only a
        rendering builder (`render`) yields tuples: see `events` for the others.
        """
        if self.sequence == 0:
            yield self._lifecycle("response.created")
        self.response["status"] = "in_progress"
        yield self._lifecycle("response.in_progress")
        try:
            for delta in deltas:
                item = self.item
                kind = type(delta)
                if kind is TextRun:  # a run's chunks in one loop here, not each through every layer
                    chunks = delta.chunks  # type: ignore[union-attr]
                    if not chunks:
                        continue
                    if item is None or item["type"] != "message":
                        yield from self._text(TextDelta(*chunks[0]))  # opens the message
                        item, chunks = self.item, chunks[1:]
                    if self.quiet:  # nobody sees the chunks: the text grows once
                        item["content"][0]["text"] += "".join([text for text, _ in chunks])  # type: ignore[index]
                    elif self.render and (self.whole_runs or delta.pace is not None):  # type: ignore[union-attr]
                        yield from self._paced_text(item, chunks, delta.pace)  # type: ignore[arg-type,union-attr]
                    elif self.render:
                        yield from self._rendered_text(item, chunks)  # type: ignore[arg-type]
                    else:
                        more = self._more_text
                        for text, _ in chunks:
                            yield more(item, text, NO_LOGPROBS)  # type: ignore[arg-type,misc]
                    continue
                if kind is TextDelta and item is not None and item["type"] == "message":
                    event = self._more_text(item, delta.text, delta.logprobs)  # type: ignore[union-attr]
                    if event is not None:  # most deltas: no generator per delta
                        yield event
                    continue
                yield from self.feed(delta)
                if self.finish is not None:
                    break
        except ClientGone:  # the client left mid-wait (or a fault cuts it): no failure of the model, nothing to send
            raise
        except ShuttingDown as cut:  # the server's graceful timeout is over: the response ends failed, and says why
            yield from self.fail(cut.code, cut.message)
            return
        except Exception:  # a backend failure becomes response.failed, never a broken stream (nor its details)
            log.exception("generation failed")
            yield from self.fail("server_error", "The model failed to generate a response.")
            return
        if self.finish is None:
            yield from self.fail("server_error", "The model stopped without finishing the response.")

    def events(self, deltas: Iterable[Delta]) -> Iterator[Event]:
        """`run` for a builder that does not render: every event a dict."""
        assert not self.render, "a rendering builder yields serialized text deltas too: use run"
        return cast(Iterator[Event], self.run(deltas))

    def feed(self, delta: Delta) -> Iterator[Event]:
        if isinstance(delta, ReasoningDelta):
            yield from self._reasoning(delta)
        elif isinstance(delta, TextDelta):
            yield from self._text(delta)
        elif isinstance(delta, TextRun):
            for text, tokens in delta.chunks:
                yield from self._text(TextDelta(text, tokens))
        elif isinstance(delta, ToolCallStart):
            yield from self._close()
            yield from self._open_call(delta)
        elif isinstance(delta, ToolArgsDelta):
            item = self.item
            assert item is not None and item["type"] in ("function_call", "custom_tool_call"), \
                "ToolArgsDelta outside a tool call"
            field, kind = ("arguments", "function_call_arguments") if item["type"] == "function_call" else \
                ("input", "custom_tool_call_input")
            item[field] += delta.text
            yield self._event(f"response.{kind}.delta", item_id=item["id"],
                              output_index=self._index, delta=delta.text, **self._obfuscation())
        elif isinstance(delta, ToolItem):
            yield from self._close()
            yield from self._hosted(delta)
        elif isinstance(delta, TextAnnotation):
            item = self.item
            assert item is not None and item["type"] == "message", "TextAnnotation outside a message"
            annotations = item["content"][0]["annotations"]
            annotations.append(dict(delta.annotation))
            yield self._event("response.output_text.annotation.added", item_id=item["id"],
                              output_index=self._index, content_index=0, annotation_index=len(annotations) - 1,
                              annotation=dict(delta.annotation))
        elif isinstance(delta, Finish):
            yield from self._finish(delta)

    def queue(self) -> list[Event]:
        """A background response's first events, sent before it runs: created and queued."""
        self.response["status"] = "queued"
        return [self._lifecycle("response.created"), self._lifecycle("response.queued")]

    def detached(self) -> EventBuilder:
        """A builder that carries on from this one's sequence with its own copy of the response."""
        clone = copy.copy(self)
        clone.response = copy.deepcopy(self.response)
        return clone

    def cancel(self) -> Iterator[Event]:
        """Stop where generation is: the open item ends incomplete and the response cancelled.

        The SDK's types have no event of a cancelled response; `response.incomplete` carrying it (status
        `cancelled`) ends the stream with a terminal event clients know.
        """
        yield from self._close(status="incomplete")
        self.response["status"] = "cancelled"
        yield self._lifecycle(CANCELLED)

    def fail(self, code: str, message: str) -> Iterator[Event]:
        """End the response as failed (after closing what is open)."""
        yield from self._close(status="incomplete")
        self.response.update(status="failed", error={"code": code, "message": message})
        yield self._lifecycle("response.failed")

    def error(self, code: str, message: str, param: str | None = None) -> Event:
        """A stream-level `error` event: the stream stops there, with no terminal response event."""
        return self._event("error", code=code, message=message, param=param)

    # --- items --------------------------------------------------------------------------------

    @property
    def _index(self) -> int:
        return len(self.response["output"]) - 1

    def _new_id(self, prefix: str, parent: str | None = None) -> str:
        """The id of the item about to be opened (at the next output index)."""
        return self.entropy.item_id(prefix, len(self.response["output"]), parent)

    def _open(self, item: dict[str, Any]) -> Event:
        self.response["output"].append(item)
        self.item = item
        return self._event("response.output_item.added", output_index=self._index, item=item)

    def _reasoning(self, delta: ReasoningDelta) -> Iterator[Event]:
        item = self.item
        if item is None or item["type"] != "reasoning":
            yield from self._close()
            item = {"id": self._new_id("rs"), "type": "reasoning", "summary": []}
            yield self._open(item)
        if delta.text:
            content = item.setdefault("content", [])
            if not content:
                content.append({"type": "reasoning_text", "text": ""})
                yield self._event("response.content_part.added", item_id=item["id"], output_index=self._index,
                                  content_index=0, part={"type": "reasoning_text", "text": ""})
            content[0]["text"] += delta.text
            yield self._event("response.reasoning_text.delta", item_id=item["id"], output_index=self._index,
                              content_index=0, delta=delta.text, **self._obfuscation())
        if delta.summary:
            if not item["summary"]:
                item["summary"].append({"type": "summary_text", "text": ""})
                yield self._event("response.reasoning_summary_part.added", item_id=item["id"],
                                  output_index=self._index, summary_index=0,
                                  part={"type": "summary_text", "text": ""})
            item["summary"][0]["text"] += delta.summary
            yield self._event("response.reasoning_summary_text.delta", item_id=item["id"], output_index=self._index,
                              summary_index=0, delta=delta.summary, **self._obfuscation())

    def _text(self, delta: TextDelta) -> Iterator[Event]:
        item = self.item
        if item is None or item["type"] != "message":
            yield from self._close()
            item = {"id": self._new_id("msg"), "type": "message", "status": "in_progress", "content": [],
                    "role": "assistant"}
            yield self._open(item)
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            item["content"].append(part)
            yield self._event("response.content_part.added", item_id=item["id"], output_index=self._index,
                              content_index=0, part=dict(part, annotations=[], logprobs=[]))
        event = self._more_text(item, delta.text, delta.logprobs)
        if event is not None:
            yield event

    def _rendered_text(self, item: dict[str, Any], chunks: tuple[tuple[str, int], ...]) -> Iterator[SerializedEvent]:
        """A run's text deltas, serialized as `dumps_event` writes them (see `_rendered`); the text and sequence
        numbers move on as each is taken, so a stream cut in the middle leaves the builder where it stopped."""
        part = item["content"][0]
        texts = [text for text, _ in chunks]
        sequence = self.sequence
        for text, data in zip(texts, self._rendered(item, texts, sequence), strict=True):
            part["text"] += text
            sequence += 1
            self.sequence = sequence
            yield TEXT_DELTA, data

    def _paced_text(self, item: dict[str, Any], chunks: tuple[tuple[str, int], ...], pace: Any
                    ) -> Iterator[SerializedEvent | PacedEvent]:
        """A run's text deltas for a transport that sends them itself. Paced: the first chunk's is due now, the
        others' all rendered now and handed on as one PacedText, for the transport to send each when it is due
        (`pace`, llmsim/timing/pacing.py). Not paced (`pace` None): all of them in one PacedText, sent at once."""
        if pace is not None and len(chunks) > len(pace.delays):  # the first chunk did not open the message:
            yield from self._rendered_text(item, chunks[:1])  # its delta goes first
            chunks = chunks[1:]
        texts = [text for text, _ in chunks]
        data = self._rendered(item, texts, self.sequence)
        item["content"][0]["text"] += "".join(texts)
        self.sequence += len(texts)
        yield PACED_TEXT, PacedText(data, pace)

    def _rendered(self, item: dict[str, Any], texts: list[str], sequence: int) -> list[str]:
        """The JSON of the text deltas carrying `texts`, numbered from `sequence`, as `dumps_event` writes them,
        without a dict each: what is the same for all of them (the item, its index) is written once, and the
        rest is joined by C-level iterators, with no Python step per delta."""
        head, middle = _text_delta_frame(item["id"], self._index, 0)
        count = len(texts)
        fields: list[Iterable[str]] = [repeat(head, count), map(str, range(sequence, sequence + count)),
                                       repeat(middle, count), map(_string, texts)]
        if self.obfuscate:
            fields += [repeat(_OBFUSCATED, count), self.entropy.obfuscations(count), repeat('"}', count)]
        else:
            fields.append(repeat(_text_delta_tail(None), count))
        return list(map("".join, zip(*fields, strict=True)))

    def _more_text(self, item: dict[str, Any], text: str, logprobs: list[dict[str, Any]]) -> Event | None:
        """The open message's text grows by `text`: its event, or None when the builder is quiet."""
        part = item["content"][0]
        part["text"] += text
        if logprobs:
            part["logprobs"].extend(logprobs)
        if self.quiet:
            return None
        event = {"type": TEXT_DELTA, "sequence_number": self.sequence, "item_id": item["id"],
                 "output_index": self._index, "content_index": 0, "delta": text,
                 "logprobs": event_logprobs(logprobs) if logprobs else []}
        self.sequence += 1
        if self.obfuscate:
            event["obfuscation"] = self.entropy.obfuscation()
        return event

    def _open_call(self, delta: ToolCallStart) -> Iterator[Event]:
        if delta.kind == "custom_tool_call":
            item = {"id": self._new_id("ctc"), "type": "custom_tool_call", "call_id": delta.call_id, "name": delta.name,
                    "input": ""}
        else:
            reasoning = next((i for i in reversed(self.response["output"]) if i["type"] == "reasoning"), None)
            item = {"id": self._new_id("fc", reasoning and reasoning["id"]), "type": "function_call",
                    "status": "in_progress", "arguments": "", "call_id": delta.call_id, "name": delta.name}
        yield self._open(item)

    def _hosted(self, delta: ToolItem) -> Iterator[Event]:
        """A built-in tool item, whole: added (in progress), its phase and stream events, done."""
        kind = delta.item["type"]
        prefix, before, streamed, after = HOSTED[kind]
        final = {"id": self._new_id(prefix), **delta.item}
        shown = {k: None if k in HOSTED_RESULTS else v for k, v in final.items()}
        if kind in STATUSED:
            final["status"], shown["status"] = final.get("status", "completed"), "in_progress"
        if streamed:
            shown[streamed[0]] = ""
        yield self._open(shown)
        index = self._index
        for phase in before:
            yield self._event(f"response.{kind}.{phase}", item_id=final["id"], output_index=index)
        if streamed:
            field, event = streamed
            text = final[field] or ""
            for start in range(0, len(text), STREAM_CHUNK):
                yield self._event(f"{event}.delta", item_id=final["id"], output_index=index,
                                  delta=text[start:start + STREAM_CHUNK], **self._obfuscation())
            yield self._event(f"{event}.done", item_id=final["id"], output_index=index, **{field: text})
        for i, image in enumerate(delta.partial_images):
            yield self._event("response.image_generation_call.partial_image", item_id=final["id"],
                              output_index=index, partial_image_index=i, partial_image_b64=image)
        for phase in after:
            yield self._event(f"response.{kind}.{phase}", item_id=final["id"], output_index=index)
        self.response["output"][index] = final
        self.item = None
        yield self._event("response.output_item.done", output_index=index, item=final)

    def _close(self, status: str = "completed") -> Iterator[Event]:
        """Finish the open item: its done events, then output_item.done."""
        item, self.item = self.item, None
        if item is None:
            return
        index = self._index
        if item["type"] == "reasoning":
            for i, part in enumerate(item["summary"]):
                yield self._event("response.reasoning_summary_text.done", item_id=item["id"], output_index=index,
                                  summary_index=i, text=part["text"])
                yield self._event("response.reasoning_summary_part.done", item_id=item["id"], output_index=index,
                                  summary_index=i, part=dict(part))
            for i, part in enumerate(item.get("content") or []):
                yield self._event("response.reasoning_text.done", item_id=item["id"], output_index=index,
                                  content_index=i, text=part["text"])
                yield self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                  content_index=i, part=dict(part))
            if self.encrypted_reasoning:
                item["encrypted_content"] = self.entropy.encrypted_reasoning(index)
        elif item["type"] == "message":
            item["status"] = status
            for i, part in enumerate(item["content"]):
                yield self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                  content_index=i, text=part["text"], logprobs=event_logprobs(part["logprobs"]))
                yield self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                  content_index=i, part=part)
        elif item["type"] == "function_call":
            item["status"] = status
            yield self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                              name=item["name"], arguments=item["arguments"])
        elif item["type"] == "custom_tool_call":
            yield self._event("response.custom_tool_call_input.done", item_id=item["id"], output_index=index,
                              input=item["input"])
        yield self._event("response.output_item.done", output_index=index, item=item)

    def _finish(self, finish: Finish) -> Iterator[Event]:
        self.finish = finish
        truncated = finish.reason == "length"
        yield from self._close(status="incomplete" if truncated else "completed")
        self.response["usage"] = usage_dict(finish.usage)
        if truncated:
            self.response.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
            yield self._lifecycle("response.incomplete")
        else:
            self.response.update(status="completed", completed_at=self.entropy.now())
            yield self._lifecycle("response.completed")

    # --- events -------------------------------------------------------------------------------

    def _lifecycle(self, kind: str) -> Event:
        return self._event(kind, response=self.response)

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _obfuscation(self) -> dict[str, str]:
        """Padding the real API adds to delta events against length side channels."""
        return {"obfuscation": self.entropy.obfuscation()} if self.obfuscate else {}




_encode = wire.dumps
_string = json.encoder.encode_basestring  # a str as JSON, UTF-8 as is: what the encoder does with one
_TEXT_DELTA_KEYS = ("type", "sequence_number", "item_id", "output_index", "content_index", "delta", "logprobs",
                    "obfuscation")


def dumps_event(event: Event) -> str:
    """`dumps(event)`; a text delta, most of a stream's events, by formatting instead of walking the dict."""
    if event["type"] != TEXT_DELTA or event["logprobs"] or tuple(event) != _TEXT_DELTA_KEYS[:len(event)] \
            or len(event) < 7:
        return _encode(event)
    head, middle = _text_delta_frame(event["item_id"], event["output_index"], event["content_index"])
    tail = _text_delta_tail(event["obfuscation"] if len(event) == 8 else None)
    return f"{head}{event['sequence_number']:d}{middle}{_string(event['delta'])}{tail}"


def _text_delta_frame(item_id: str, output_index: int, content_index: int) -> tuple[str, str]:
    """A text delta without logprobs as JSON, as the encoder writes it: what comes before its sequence number,
    and between that and its delta (the same for every delta of one part)."""
    return (f'{{"type":"{TEXT_DELTA}","sequence_number":',
            f',"item_id":{_string(item_id)},"output_index":{output_index:d},"content_index":{content_index:d},'
            '"delta":')


def _text_delta_tail(obfuscation: str | None) -> str:
    return f',"logprobs":[],"obfuscation":{_string(obfuscation)}}}' if obfuscation is not None else ',"logprobs":[]}'


_OBFUSCATED = ',"logprobs":[],"obfuscation":"'  # a padding is URL-safe base64: nothing in it to escape in JSON


def cancelled_event(response: dict[str, Any], sequence_number: int) -> Event:
    """The terminal event of a response cancelled before it ran (see EventBuilder.cancel)."""
    return {"type": CANCELLED, "sequence_number": sequence_number, "response": response}


def event_logprobs(logprobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Logprobs as text events carry them: without the `bytes` the output_text part keeps."""
    return [{"token": p["token"], "logprob": p["logprob"],
             "top_logprobs": [{"token": t["token"], "logprob": t["logprob"]} for t in p.get("top_logprobs") or []]}
            for p in logprobs]


def usage_dict(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens, "cache_write_tokens": usage.cache_write_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
