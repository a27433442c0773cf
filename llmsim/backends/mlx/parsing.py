"""Streamed model text → reasoning, visible text and tool calls.

Models mark thinking and tool calls with text markers: `<think>…</think>` (or the
tokenizer's own pair), Qwen/Hermes `<tool_call>{json}</tool_call>`, Mistral
`[TOOL_CALLS][{json}, …]` or `[TOOL_CALLS]name[ARGS]{json}`, Llama 3
`<|python_tag|>{json}` or a bare JSON object as the whole answer. The parser
holds back any text that could be the start of a marker, so a marker split across
tokens is never shown to the client. A call's arguments stream as the model writes
them (`CallStream`); text that turns out not to be a call is parsed whole at its end.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from llmsim import ids
from llmsim.generation import Delta, ReasoningDelta, TextDelta, ToolArgsDelta, ToolCallStart

TOOL_OPEN, TOOL_CLOSE = "<tool_call>", "</tool_call>"
TAIL_MARKERS = ("[TOOL_CALLS]", "<|python_tag|>")  # everything after these, to the end, is tool calls
_MISTRAL_HEADER = re.compile(r"\s*([\w.-]+)\s*\[ARGS\]\s*")
_ARGS_START = re.compile(r'"(?:arguments|parameters)"\s*:\s*\{|\[ARGS\]\s*\{')
_JSON_HEAD = re.compile(r'\{\s*"name"\s*:\s*"((?:[^"\\]|\\.)*)"\s*,\s*"(?:arguments|parameters)"\s*:\s*(?=\{)')
_SEPARATORS = " \t\r\n;,[]"
HEAD_LIMIT = 512  # characters of a call before its arguments: past that it is not a call we can stream


@dataclass
class ParsedCall:
    name: str
    arguments: str


def _call(data: Any) -> ParsedCall | None:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str):
        return None
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):
        return ParsedCall(data["name"], arguments)
    if not isinstance(arguments, dict):
        return None
    return ParsedCall(data["name"], json.dumps(arguments, ensure_ascii=False))


def parse_calls(text: str) -> list[ParsedCall] | None:
    """Tool calls in `text` (one JSON object, a JSON array, `;`-separated objects, or Mistral
    `name[ARGS]{…}` headers); None when it is not tool-call text."""
    text = text.replace(TAIL_MARKERS[0], " ").strip()  # Mistral repeats its marker before each call
    decoder = json.JSONDecoder()
    calls: list[ParsedCall] = []
    position = 0
    try:
        while position < len(text):
            header = _MISTRAL_HEADER.match(text, position)
            if header:
                arguments, position = decoder.raw_decode(text, header.end())
                data: Any = {"name": header.group(1), "arguments": arguments}
            else:
                data, position = decoder.raw_decode(text, position)
            for entry in data if isinstance(data, list) else [data]:
                call = _call(entry)
                if call is None:
                    return None
                calls.append(call)
            while position < len(text) and text[position] in " \t\r\n;,":
                position += 1
    except json.JSONDecodeError:
        return None
    return calls or None


class CallStream:
    """Tool-call text in, `ToolCallStart` and `ToolArgsDelta`s out as the arguments object arrives.

    Recognises `{"name": …, "arguments"|"parameters": {…}}` (Hermes/Qwen, Llama 3, Mistral's JSON list) and
    Mistral's `name[ARGS]{…}`, one call after another. Anything else stops streaming (`failed`), and the
    caller parses the whole text at the end as before.
    """

    def __init__(self) -> None:
        self.buffer = ""
        self.state = "head"  # head | args | close (the call object's own closing brace)
        self.wrapped = False  # the arguments sit inside a call object
        self.depth = 0
        self.in_string = self.escape = False
        self.started = 0  # calls streamed so far
        self.failed = False

    def feed(self, text: str) -> list[Delta]:
        out: list[Delta] = []
        if self.failed:
            return out
        self.buffer += text
        while self.buffer and not self.failed:
            if self.state == "head" and not self._head(out):
                break
            if self.state == "args":
                self._args(out)
            if self.state == "close":
                rest = self.buffer.lstrip()
                if not rest:
                    self.buffer = ""
                    break
                self.buffer = rest[1:] if rest[0] == "}" else rest
                self.state = "head"
        return out

    def _head(self, out: list[Delta]) -> bool:
        rest = self.buffer.replace(TAIL_MARKERS[0], " ").lstrip(_SEPARATORS)
        if not rest:
            return False  # separators, or the start of a marker: wait for more
        start = _ARGS_START.search(rest)
        if start is None:
            self.failed = len(rest) > HEAD_LIMIT
            return False
        head = _JSON_HEAD.match(rest) or _MISTRAL_HEADER.match(rest)
        if head is None or head.end() > start.end():
            self.failed = True
            return False
        name = json.loads(f'"{head.group(1)}"') if head.re is _JSON_HEAD else head.group(1)
        self.wrapped = head.re is _JSON_HEAD
        self.buffer = rest[head.end():].lstrip()
        self.state, self.depth = "args", 0
        self.started += 1
        out.append(ToolCallStart(call_id=ids.new("call", 24), name=name))
        return True

    def _args(self, out: list[Delta]) -> None:
        for i, char in enumerate(self.buffer):
            if self.escape:
                self.escape = False
            elif self.in_string:
                self.escape = char == "\\"
                self.in_string = char != '"'
            elif char == '"':
                self.in_string = True
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
                if self.depth == 0:
                    out.append(ToolArgsDelta(text=self.buffer[: i + 1]))
                    self.buffer = self.buffer[i + 1:]
                    self.state = "close" if self.wrapped else "head"
                    return
        if self.buffer:
            out.append(ToolArgsDelta(text=self.buffer))
        self.buffer = ""


def summarize(reasoning: str, detail: str) -> str:
    """A summary of the visible reasoning: its first sentences (more for `detailed`)."""
    sentences = re.split(r"(?<=[.!?])\s+", " ".join(reasoning.split()))
    count = {"concise": 1, "auto": 2, "detailed": 4}.get(detail, 2)
    return " ".join(sentences[:count])


@dataclass
class OutputParser:
    """Feed decoded text as it streams; get Deltas back. `close()` at the end of generation."""

    think: tuple[str, str] | None = ("<think>", "</think>")
    in_think: bool = False  # the prompt already opened the thinking block
    tools: bool = False  # look for tool calls only when the request offers tools
    summary: str | None = None  # reasoning.summary in force: emit a summary when thinking ends
    calls: int = 0
    _buffer: str = ""
    _mode: str = "text"  # text | think | tool | tail | json
    _started: bool = False  # visible text has begun (leading whitespace dropped until then)
    _reasoning: list[str] = field(default_factory=list)
    _calls: CallStream | None = None  # the call being streamed in tool, tail or json mode
    _raw: str = ""  # what that mode has seen, parsed whole if it never streamed

    def __post_init__(self) -> None:
        if self.in_think and self.think:
            self._mode = "think"

    @property
    def thinking(self) -> bool:
        return self._mode == "think"

    def feed(self, text: str) -> list[Delta]:
        self._buffer += text
        out: list[Delta] = []
        while self._step(out):
            pass
        return out

    def close(self) -> list[Delta]:
        out: list[Delta] = []
        rest, self._buffer = self._buffer, ""
        if self._mode == "think":
            self._emit(rest.rstrip(), out)
            self._end_think(out)
        elif self._mode == "tool":
            if not self._stream(rest, out):
                self._text(TOOL_OPEN + self._raw, out)  # cut off before the close marker: show what came
        elif self._mode in ("tail", "json"):
            if not self._stream(rest, out):
                calls = parse_calls(self._raw)
                if calls is None:
                    self._text(self._raw, out)
                else:
                    self._whole(calls, out)
        else:
            self._text(rest.rstrip(), out)
        return out

    # --- internals ----------------------------------------------------------------------------

    def _markers(self) -> list[str]:
        if self._mode == "think":
            return [self.think[1]] if self.think else []
        if self._mode == "tool":
            return [TOOL_CLOSE]
        if self._mode != "text":
            return []
        markers = [self.think[0]] if self.think else []
        return markers + ([TOOL_OPEN, *TAIL_MARKERS] if self.tools else [])

    def _step(self, out: list[Delta]) -> bool:
        """Consume what can be decided in the buffer; True when the mode changed (look again)."""
        if self._mode in ("tail", "json"):
            text, self._buffer = self._buffer, ""
            self._stream(text, out)
            return False
        if self._mode == "text" and self.tools and not self._started:
            stripped = self._buffer.lstrip()
            if not stripped:
                return False
            if stripped[0] == "{":  # Llama 3 answers a call with a bare JSON object
                self._mode, self._buffer = "json", stripped
                self._calls, self._raw = CallStream(), ""
                return True
        markers = self._markers()
        found = [(self._buffer.find(m), m) for m in markers]
        found = [(i, m) for i, m in found if i >= 0]
        if found:
            index, marker = min(found)
            before, self._buffer = self._buffer[:index], self._buffer[index + len(marker):]
            self._switch(marker, before, out)
            return True
        if self._mode == "tool":  # stream what cannot be part of the close marker
            hold = max((k for k in range(1, len(TOOL_CLOSE)) if self._buffer.endswith(TOOL_CLOSE[:k])), default=0)
            text, self._buffer = self._buffer[: len(self._buffer) - hold], self._buffer[len(self._buffer) - hold:]
            self._stream(text, out)
            return False
        hold = max((k for m in markers for k in range(1, len(m)) if self._buffer.endswith(m[:k])), default=0)
        ready = self._buffer[: len(self._buffer) - hold]
        ready = ready.rstrip()  # trailing whitespace waits: it may precede a marker
        self._buffer = self._buffer[len(ready):]
        self._emit(ready, out)
        return False

    def _switch(self, marker: str, before: str, out: list[Delta]) -> None:
        if self._mode == "think":
            self._emit(before.rstrip(), out)
            self._end_think(out)
            self._mode = "text"
        elif self._mode == "tool":
            if not self._stream(before, out):
                calls = parse_calls(self._raw)
                if calls is None:
                    self._text(TOOL_OPEN + self._raw + TOOL_CLOSE, out)
                else:
                    self._whole(calls, out)
            self._mode = "text"
        else:
            self._text(before.rstrip(), out)
            self._mode = {TOOL_OPEN: "tool", **{m: "tail" for m in TAIL_MARKERS}}.get(marker, "think")
            if self._mode != "think":
                self._calls, self._raw = CallStream(), ""

    def _emit(self, text: str, out: list[Delta]) -> None:
        if self._mode == "think":
            if not self._reasoning:
                text = text.lstrip()
            if text:
                self._reasoning.append(text)
                out.append(ReasoningDelta(text=text))
        else:
            self._text(text, out)

    def _text(self, text: str, out: list[Delta]) -> None:
        if not self._started:
            text = text.lstrip()
        if text:
            self._started = True
            out.append(TextDelta(text=text))

    def _end_think(self, out: list[Delta]) -> None:
        if self.summary and self._reasoning:
            out.append(ReasoningDelta(summary=summarize("".join(self._reasoning), self.summary)))

    def _stream(self, text: str, out: list[Delta]) -> bool:
        """Feed the call stream; True once it has streamed a call (the text is then its business)."""
        self._raw += text
        stream = self._calls
        if stream is None:
            return False
        deltas = stream.feed(text)
        self.calls += sum(isinstance(d, ToolCallStart) for d in deltas)
        out.extend(deltas)
        return stream.started > 0

    def _whole(self, calls: list[ParsedCall], out: list[Delta]) -> None:
        for call in calls:
            self.calls += 1
            out.append(ToolCallStart(call_id=ids.new("call", 24), name=call.name))
            out.append(ToolArgsDelta(text=call.arguments))


def think_markers(tokenizer: Any) -> tuple[str, str] | None:
    """The model's own thinking markers (mlx_lm infers them from the vocabulary)."""
    start, end = getattr(tokenizer, "think_start", None), getattr(tokenizer, "think_end", None)
    return (start, end) if start and end else None

