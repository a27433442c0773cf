"""Deltas → typed Responses stream events and the final Response object.

This is the only module that knows the event taxonomy. Every transport drains
the same events: non-streaming keeps the final Response, SSE and WebSocket
serialize each event as it comes.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Iterable, Iterator
from typing import Any

from llmsim import ids
from llmsim.backends.base import Delta, Finish, ReasoningDelta, TextDelta, ToolArgsDelta, ToolCallStart, Usage

Event = dict[str, Any]
TERMINAL = frozenset({"response.completed", "response.incomplete", "response.failed", "error"})


class EventBuilder:
    """Feeds deltas into `response` (a Response dict) and yields the events a client sees."""

    def __init__(self, response: dict[str, Any], *, encrypted_reasoning: bool = False,
                 obfuscate: bool = False) -> None:
        self.response = response
        self.encrypted_reasoning = encrypted_reasoning
        self.obfuscate = obfuscate
        self.sequence = 0
        self.item: dict[str, Any] | None = None
        self.finish: Finish | None = None

    # --- public -------------------------------------------------------------------------------

    def run(self, deltas: Iterable[Delta]) -> Iterator[Event]:
        """All events of one response: created, in_progress, items, then exactly one terminal event."""
        yield self._lifecycle("response.created")
        yield self._lifecycle("response.in_progress")
        try:
            for delta in deltas:
                yield from self.feed(delta)
                if self.finish is not None:
                    break
        except Exception as exc:  # a backend failure becomes response.failed, never a broken stream
            yield from self.fail("server_error", f"The model failed to generate a response: {exc}")
            return
        if self.finish is None:
            yield from self.fail("server_error", "The model stopped without finishing the response.")

    def feed(self, delta: Delta) -> Iterator[Event]:
        if isinstance(delta, ReasoningDelta):
            yield from self._reasoning(delta)
        elif isinstance(delta, TextDelta):
            yield from self._text(delta)
        elif isinstance(delta, ToolCallStart):
            yield from self._close()
            yield from self._open_call(delta)
        elif isinstance(delta, ToolArgsDelta):
            item = self.item
            assert item is not None and item["type"] == "function_call", "ToolArgsDelta outside a tool call"
            item["arguments"] += delta.text
            yield self._event("response.function_call_arguments.delta", item_id=item["id"],
                              output_index=self._index, delta=delta.text, **self._obfuscation())
        elif isinstance(delta, Finish):
            yield from self._finish(delta)

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

    def _open(self, item: dict[str, Any]) -> Event:
        self.response["output"].append(item)
        self.item = item
        return self._event("response.output_item.added", output_index=self._index, item=copy.deepcopy(item))

    def _reasoning(self, delta: ReasoningDelta) -> Iterator[Event]:
        item = self.item
        if item is None or item["type"] != "reasoning":
            yield from self._close()
            item = {"id": ids.new("rs"), "type": "reasoning", "summary": []}
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
            item = {"id": ids.new("msg"), "type": "message", "status": "in_progress", "content": [],
                    "role": "assistant"}
            yield self._open(item)
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            item["content"].append(part)
            yield self._event("response.content_part.added", item_id=item["id"], output_index=self._index,
                              content_index=0, part=dict(part, annotations=[], logprobs=[]))
        part = item["content"][0]
        part["text"] += delta.text
        part["logprobs"].extend(delta.logprobs)
        yield self._event("response.output_text.delta", item_id=item["id"], output_index=self._index,
                          content_index=0, delta=delta.text, logprobs=delta.logprobs, **self._obfuscation())

    def _open_call(self, delta: ToolCallStart) -> Iterator[Event]:
        item = {"id": ids.new("fc"), "type": "function_call", "status": "in_progress", "arguments": "",
                "call_id": delta.call_id, "name": delta.name}
        yield self._open(item)

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
                item["encrypted_content"] = "gAAAAA" + secrets.token_urlsafe(96)
        elif item["type"] == "message":
            item["status"] = status
            for i, part in enumerate(item["content"]):
                yield self._event("response.output_text.done", item_id=item["id"], output_index=index,
                                  content_index=i, text=part["text"], logprobs=list(part["logprobs"]))
                yield self._event("response.content_part.done", item_id=item["id"], output_index=index,
                                  content_index=i, part=copy.deepcopy(part))
        elif item["type"] == "function_call":
            item["status"] = status
            yield self._event("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                              name=item["name"], arguments=item["arguments"])
        yield self._event("response.output_item.done", output_index=index, item=copy.deepcopy(item))

    def _finish(self, finish: Finish) -> Iterator[Event]:
        self.finish = finish
        truncated = finish.reason == "length"
        yield from self._close(status="incomplete" if truncated else "completed")
        self.response["usage"] = usage_dict(finish.usage)
        if truncated:
            self.response.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
            yield self._lifecycle("response.incomplete")
        else:
            self.response.update(status="completed", completed_at=int(time.time()))
            yield self._lifecycle("response.completed")

    # --- events -------------------------------------------------------------------------------

    def _lifecycle(self, kind: str) -> Event:
        return self._event(kind, response=copy.deepcopy(self.response))

    def _event(self, kind: str, **fields: Any) -> Event:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def _obfuscation(self) -> dict[str, str]:
        """Padding the real API adds to delta events against length side channels."""
        return {"obfuscation": secrets.token_urlsafe(6)} if self.obfuscate else {}


def usage_dict(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }
