"""Chat Completions: another way into the same Prompt and another serializer of the same Deltas.

A chat request is rewritten as the Responses request it means (messages → input items,
tools, tool_choice, response_format → text.format, ...), so the translator applies the
same model rules (reasoning gating, context window, schemas); the backend's Deltas then
become `chat.completion` objects or `chat.completion.chunk`s.
"""

from __future__ import annotations

import copy
import re
import secrets
import string
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from llmsim.chat.schema import (
    REFUSED,
    AssistantMessage,
    ChatRequest,
    FunctionMessage,
    SystemMessage,
    ToolChoice,
    ToolMessage,
    UserMessage,
)
from llmsim.errors import APIError
from llmsim.generation import (
    Delta,
    Finish,
    Prompt,
    ReasoningDelta,
    TextAnnotation,
    TextDelta,
    ToolArgsDelta,
    ToolCallStart,
    Usage,
)
from llmsim.responses import schema, toolspec, translate
from llmsim.timing.profiles import Profile

ID_ALPHABET = string.ascii_letters + string.digits
# Responses parameter names as a chat client knows them, for errors raised by the shared translator.
CHAT_PARAMS = (
    (r"^reasoning\.effort", "reasoning_effort"),
    (r"^text\.format\.schema", "response_format.json_schema.schema"),
    (r"^text\.format", "response_format"),
    (r"^text\.verbosity", "verbosity"),
    (r"^input\b", "messages"),
    (r"^(tools\[\d+\])\.parameters", r"\1.function.parameters"),
)
# ... and as the translator's messages name them.
CHAT_WORDS = (("'text.format'", "'response_format'"), ("Response input messages", "'messages'"))


# --- request → Prompt --------------------------------------------------------------------------


def parse(body: Any, lenient: list[str] | None = None) -> ChatRequest:
    """The request, or the live API's 400; `lenient`: see llmsim/responses/schema.py's parse."""
    if isinstance(body, dict) and body.get("messages") == []:
        raise APIError("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
                       "array instead.", param="messages", code="empty_array")
    request = schema.parse(ChatRequest, body, lenient, REFUSED)
    schema.check_metadata(request.metadata)
    if request.top_logprobs is not None and not request.logprobs:
        raise APIError("Invalid value for 'top_logprobs': you must set 'logprobs' to true to use 'top_logprobs'.",
                       param="top_logprobs", code="invalid_value")
    if request.stream_options is not None and not request.stream:
        raise APIError("The 'stream_options' parameter is only allowed when 'stream' is enabled.",
                       param="stream_options", code="invalid_value")
    if request.max_tokens is not None and request.max_completion_tokens is not None:
        raise APIError("Only one of 'max_tokens' and 'max_completion_tokens' may be set.", param="max_tokens",
                       code="invalid_value")
    return request


def _text(content: str | list[Any] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(getattr(part, "text", None) or getattr(part, "refusal", None) or "" for part in content)


def _user_part(part: Any) -> dict[str, Any]:
    if part.type == "text":
        return {"type": "input_text", "text": part.text}
    if part.type == "image_url":
        return {"type": "input_image", "image_url": part.image_url.url, "detail": part.image_url.detail}
    if part.type == "file":
        return {"type": "input_file", **part.file.model_dump(exclude_none=True)}
    return {"type": "input_text", "text": f"[{part.input_audio.format} audio]"}  # counted, never heard


def input_items(request: ChatRequest) -> list[dict[str, Any]]:
    """The messages as Responses input items: what the translator and the backends read."""
    items: list[dict[str, Any]] = []
    for i, message in enumerate(request.messages):
        if isinstance(message, SystemMessage):
            items.append({"type": "message", "role": message.role, "content": _text(message.content)})
        elif isinstance(message, UserMessage):
            content = message.content if isinstance(message.content, str) else [
                _user_part(p) for p in message.content]
            items.append({"type": "message", "role": "user", "content": content})
        elif isinstance(message, AssistantMessage):
            if message.tool_calls == []:  # the live API's 400: omit the field when there are no calls
                raise APIError(f"Invalid 'messages[{i}].tool_calls': empty array. Expected an array with minimum "
                               "length 1, but got an empty array instead.", param=f"messages[{i}].tool_calls",
                               code="empty_array")
            text = _text(message.content) or message.refusal or ""
            if message.content is None and not (message.refusal or message.tool_calls or message.function_call):
                raise APIError("Invalid value for 'content': expected a string, got null.",
                               param=f"messages[{i}].content", code="invalid_value")
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
            for call in message.tool_calls or []:
                if call.type == "function":
                    items.append({"type": "function_call", "call_id": call.id, "name": call.function.name,
                                  "arguments": call.function.arguments})
                else:
                    items.append({"type": "custom_tool_call", "call_id": call.id, "name": call.custom.name,
                                  "input": call.custom.input})
            if message.function_call is not None:
                items.append({"type": "function_call", "call_id": message.function_call.name,
                              "name": message.function_call.name, "arguments": message.function_call.arguments})
        elif isinstance(message, ToolMessage):
            items.append({"type": "function_call_output", "call_id": message.tool_call_id,
                          "output": _text(message.content)})
        elif isinstance(message, FunctionMessage):
            items.append({"type": "function_call_output", "call_id": message.name, "output": message.content or ""})
    return items


def _tools(request: ChatRequest) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for tool in request.tools or []:
        if tool.type == "function":
            definition = tool.function.model_dump(exclude_none=True)
            tools.append({"type": "function", **definition, "strict": bool(tool.function.strict)})
        else:
            tools.append({"type": "custom", **tool.custom.model_dump(exclude_none=True)})
            fmt = tools[-1].get("format") or {}
            if fmt.get("type") == "grammar" and isinstance(fmt.get("grammar"), dict):  # chat nests what Responses
                tools[-1]["format"] = {"type": "grammar", **fmt["grammar"]}  # has flat: {definition, syntax}
    for function in request.functions or []:  # the deprecated form
        tools.append({"type": "function", **function.model_dump(exclude_none=True), "strict": False})
    return tools


def _reference(ref: dict[str, Any]) -> dict[str, Any]:
    """`{type: function, function: {name}}` (chat) → `{type: function, name}` (Responses)."""
    kind = ref.get("type")
    inner = ref.get(kind) if isinstance(kind, str) else None
    return {"type": kind, "name": inner["name"]} if isinstance(inner, dict) and "name" in inner else ref


def _tool_choice(request: ChatRequest) -> str | dict[str, Any]:
    choice: ToolChoice | dict[str, Any] | None = request.tool_choice
    if choice is None and request.function_call is not None:  # the deprecated form
        choice = request.function_call if isinstance(request.function_call, str) else {
            "type": "function", "function": {"name": request.function_call.name}}
    if choice is None or isinstance(choice, str):
        return choice or "auto"
    data = choice if isinstance(choice, dict) else choice.model_dump()  # the deprecated form is a dict already
    if data["type"] == "allowed_tools":
        allowed = data["allowed_tools"]
        return {"type": "allowed_tools", "mode": allowed["mode"], "tools": [_reference(t) for t in allowed["tools"]]}
    return _reference(data)


def _text_config(request: ChatRequest) -> dict[str, Any]:
    text: dict[str, Any] = {}
    fmt = request.response_format
    if fmt is not None and fmt.type == "json_schema":
        spec = fmt.json_schema
        text["format"] = {"type": "json_schema", "name": spec.name, "schema": spec.schema_ or {},
                          **({"description": spec.description} if spec.description else {}),
                          **({"strict": spec.strict} if spec.strict is not None else {})}
    elif fmt is not None:
        text["format"] = {"type": fmt.type}
    if request.verbosity:
        text["verbosity"] = request.verbosity
    return text


def responses_body(request: ChatRequest) -> dict[str, Any]:
    """The Responses create request this chat request means (output limits applied separately)."""
    body: dict[str, Any] = {
        "model": request.model,
        "input": input_items(request),
        "tools": _tools(request),
        "tool_choice": _tool_choice(request),
        "text": _text_config(request),
        "store": False,
    }
    if request.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.reasoning_effort is not None:
        body["reasoning"] = {"effort": request.reasoning_effort}
    for name in ("temperature", "top_p", "top_logprobs", "metadata", "user", "safety_identifier",
                 "prompt_cache_key", "prompt_cache_retention"):
        value = getattr(request, name)
        if value is not None:
            body[name] = value
    return body


def _output_limit(request: ChatRequest, profile: Profile) -> int | None:
    param = "max_completion_tokens" if request.max_completion_tokens is not None else "max_tokens"
    limit = request.max_completion_tokens if request.max_completion_tokens is not None else request.max_tokens
    if request.max_tokens is not None and profile.reasoning is not None:
        raise APIError("Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                       "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter")
    if limit is not None and limit > profile.max_output_tokens:
        raise APIError(f"max_tokens is too large: {limit}. This model supports at most {profile.max_output_tokens} "
                       f"completion tokens, whereas you provided {limit}.", param=param, code="invalid_value")
    return limit


def _renamed(error: APIError) -> APIError:
    for pattern, chat_name in CHAT_PARAMS:
        if error.param and re.search(pattern, error.param):
            renamed = re.sub(pattern, chat_name, error.param)
            error.message = error.message.replace(f"'{error.param}'", f"'{renamed}'")
            error.param = renamed
            break
    for responses_words, chat_words in CHAT_WORDS:
        error.message = error.message.replace(responses_words, chat_words)
    return error


def build_prompt(request: ChatRequest, profile: Profile, seed: int | None) -> Prompt:
    """The Prompt through the Responses translator, with the chat-only knobs (limits, logprobs) on top."""
    limit = _output_limit(request, profile)
    try:
        responses = schema.parse(schema.CreateRequest, responses_body(request))
        toolspec.check(responses)
        effort, summary = translate.resolve_reasoning(responses, profile)
        items = translate.normalize_items(responses.input, [])
        prompt = translate.build_prompt(responses, profile, items, request.seed if request.seed is not None
                                        else seed, effort, summary)
    except APIError as error:
        raise _renamed(error) from None
    return replace(prompt, max_output_tokens=limit, logprobs=bool(request.logprobs), reasoning_summary=None,
                   presence_penalty=request.presence_penalty or 0.0,
                   frequency_penalty=request.frequency_penalty or 0.0)


def choice_prompts(prompt: Prompt, n: int) -> list[Prompt]:
    """One prompt per choice: choice i draws from its own seed, so the n answers differ yet repeat."""
    if prompt.seed is None:
        return [prompt] * n
    return [replace(prompt, seed=prompt.seed + i) for i in range(n)]


# --- Deltas → chat.completion / chat.completion.chunk --------------------------------------------


@dataclass
class Choice:
    """One choice being built from its Deltas; `feed` gives the chunk deltas a stream sends for it."""

    index: int
    stops: list[str]
    logprobs: bool
    content: str = ""
    held: str = ""  # text that could still be the start of a stop sequence
    token_logprobs: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)
    finish_reason: str | None = None
    output_tokens: int = 0
    reasoning_tokens: int = 0
    usage: Usage | None = None

    def feed(self, delta: Delta) -> Iterator[dict[str, Any]]:
        if isinstance(delta, ReasoningDelta):
            self.reasoning_tokens += delta.tokens
            self.output_tokens += delta.tokens
        elif isinstance(delta, TextDelta):
            self.output_tokens += delta.tokens
            yield from self._text(delta.text, delta.logprobs)
        elif isinstance(delta, ToolCallStart):
            call = self._call(delta)
            self.tool_calls.append(call)
            yield {"tool_calls": [{"index": len(self.tool_calls) - 1, **copy.deepcopy(call)}]}
        elif isinstance(delta, ToolArgsDelta) and self.tool_calls:
            self.output_tokens += delta.tokens
            call = self.tool_calls[-1]
            key, part = ("function", "arguments") if call["type"] == "function" else ("custom", "input")
            call[key][part] += delta.text
            yield {"tool_calls": [{"index": len(self.tool_calls) - 1, key: {part: delta.text}}]}
        elif isinstance(delta, TextAnnotation) and delta.annotation.get("type") == "url_citation":
            note = delta.annotation
            self.annotations.append({"type": "url_citation", "url_citation": {
                k: note.get(k) for k in ("start_index", "end_index", "title", "url")}})
        elif isinstance(delta, Finish):
            if self.held:
                yield {"content": self.held}
                self.content += self.held
                self.held = ""
            self.finish_reason = delta.reason
            self.usage = delta.usage

    @staticmethod
    def _call(delta: ToolCallStart) -> dict[str, Any]:
        if delta.kind == "custom_tool_call":
            return {"id": delta.call_id, "type": "custom", "custom": {"name": delta.name, "input": ""}}
        return {"id": delta.call_id, "type": "function", "function": {"name": delta.name, "arguments": ""}}

    def _text(self, text: str, logprobs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        if self.logprobs:
            self.token_logprobs.extend(logprobs)
        pending = self.held + text
        hits = [(pending.find(stop), stop) for stop in self.stops if stop in pending]
        if hits:
            pending = pending[:min(hits)[0]]
            self.finish_reason = "stop"
            self.held = ""
        else:  # keep back what a stop sequence could still complete
            keep = max((len(s) - 1 for s in self.stops), default=0)
            keep = next((k for k in range(min(keep, len(pending)), 0, -1)
                         if any(s.startswith(pending[-k:]) for s in self.stops)), 0)
            pending, self.held = (pending[:-keep], pending[-keep:]) if keep else (pending, "")
        if pending:
            self.content += pending
            yield {"content": pending, **({"logprobs": logprobs} if self.logprobs else {})}

    @property
    def done(self) -> bool:
        return self.finish_reason is not None

    def final_usage(self, input_tokens: int) -> Usage:
        """The backend's usage, or (stopped by a stop sequence) what was generated until then."""
        if self.usage is not None:
            return self.usage
        return Usage(input_tokens, self.output_tokens, self.reasoning_tokens)

    def message(self) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": self.content or (None if self.tool_calls else ""),
                                   "refusal": None, "annotations": self.annotations}
        if self.tool_calls:
            message["tool_calls"] = self.tool_calls
        return message

    def logprobs_data(self) -> dict[str, Any] | None:
        return {"content": self.token_logprobs, "refusal": None} if self.logprobs else None


def usage_dict(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
    }


def total_usage(choices: list[Choice], input_tokens: int) -> dict[str, Any]:
    """Prompt tokens once, completion tokens summed over the choices, as the real API counts n > 1."""
    usages = [choice.final_usage(input_tokens) for choice in choices]
    return usage_dict(Usage(
        input_tokens=usages[0].input_tokens if usages else input_tokens,
        output_tokens=sum(u.output_tokens for u in usages),
        reasoning_tokens=sum(u.reasoning_tokens for u in usages),
        cached_tokens=usages[0].cached_tokens if usages else 0,
    ))


class Completion:
    """The serializer: drives each choice's Deltas and frames the result as the chat API does."""

    def __init__(self, request: ChatRequest, profile: Profile, prompt: Prompt) -> None:
        self.request = request
        self.prompt = prompt
        self.id = "chatcmpl-" + "".join(secrets.choice(ID_ALPHABET) for _ in range(29))
        self.created = int(time.time())
        self.model = profile.echo_name
        tier = request.service_tier
        self.service_tier = "default" if tier in (None, "auto") else "priority" if tier == "fast" else tier
        self.fingerprint = "fp_" + secrets.token_hex(5)
        options = request.stream_options
        self.include_usage = bool(options and options.include_usage)
        self.obfuscate = bool(request.stream) and not (options and options.include_obfuscation is False)
        self.choices: list[Choice] = []

    def _choice(self, index: int) -> Choice:
        choice = Choice(index, self.request.stops, bool(self.request.logprobs))
        self.choices.append(choice)
        return choice

    def _envelope(self, kind: str) -> dict[str, Any]:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model,
                "service_tier": self.service_tier, "system_fingerprint": self.fingerprint}

    def body(self) -> dict[str, Any]:
        return {
            **self._envelope("chat.completion"),
            "choices": [{"index": c.index, "message": c.message(), "logprobs": c.logprobs_data(),
                         "finish_reason": c.finish_reason or "stop"} for c in self.choices],
            "usage": total_usage(self.choices, self.prompt.input_tokens),
        }

    def chunks(self, deltas: Iterator[Delta], index: int) -> Iterator[dict[str, Any]]:
        """The chunks of one choice: the role, its content and tool call deltas, then its finish reason."""
        choice = self._choice(index)
        yield self._chunk(index, {"role": "assistant", "content": "", "refusal": None})
        for delta in deltas:
            for part in choice.feed(delta):
                logprobs = part.pop("logprobs", None)
                yield self._chunk(index, part, {"content": logprobs, "refusal": None} if logprobs else None)
            if choice.done:
                break
        yield self._chunk(index, {}, finish_reason=choice.finish_reason or "stop")

    def usage_chunk(self) -> dict[str, Any]:
        """The last chunk when stream_options.include_usage: no choices, the whole request's usage."""
        return {**self._envelope("chat.completion.chunk"), "choices": [],
                "usage": total_usage(self.choices, self.prompt.input_tokens)}

    def _chunk(self, index: int, delta: dict[str, Any], logprobs: dict[str, Any] | None = None,
               finish_reason: str | None = None) -> dict[str, Any]:
        chunk = {**self._envelope("chat.completion.chunk"),
                 "choices": [{"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}]}
        if self.include_usage:
            chunk["usage"] = None
        if self.obfuscate:
            chunk["obfuscation"] = secrets.token_urlsafe(6)
        return chunk
