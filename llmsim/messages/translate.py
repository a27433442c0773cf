"""A Messages request → the pipeline's Prompt: rewritten as the Responses request it means (system →
instructions, blocks → input items, tools, tool_choice, thinking → reasoning), so the one translator applies the
same rules (context window, tool plans, seeds); then the Anthropic-only parts on top (thinking budget, stop
sequences, the token-count correction, prompt caching)."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from llmsim.errors import APIError
from llmsim.generation import Prompt
from llmsim.messages import cache, toolsets
from llmsim.messages.counting import corrected
from llmsim.messages.schema import (
    CompactionBlock,
    CountTokensRequest,
    CreateRequest,
    CustomTool,
    DocumentBlock,
    ImageBlock,
    Message,
    SearchResultBlock,
    TextBlock,
    ThinkingEnabled,
    ToolResultBlock,
    Toolset,
    ToolUseBlock,
    TypedTool,
)
from llmsim.responses import schema, translate
from llmsim.shared.schema_checks import schema_error
from llmsim.timing.profiles import Profile

# Thinking budget → the simulator's reasoning effort (how much it thinks before answering).
BUDGET_EFFORT = ((4096, "low"), (16384, "medium"))
ADAPTIVE_EFFORT = "medium"
EFFORTS = {"low": "low", "medium": "medium", "high": "high", "xhigh": "high", "max": "high"}  # output_config's
SUMMARY_CHARS = 200  # of each user turn, in a compaction block's summary
FORMAT_NAME = "output"  # the Responses format's name for a structured output (Anthropic's has none)
SCHEMA_WORDS = ("JSON schema is invalid. It must match JSON Schema draft 2020-12 "
                "(https://json-schema.org/draft/2020-12).")
RESPONSES_MIN_OUTPUT = 16
REMINDER = ("<system-reminder>", "</system-reminder>")
# Client tools Anthropic defines by type (Claude runs them through the client like any tool): their input.
TYPED_TOOLS = {
    "bash": {"type": "object", "properties": {"command": {"type": "string"}, "restart": {"type": "boolean"}},
             "required": ["command"]},
    "str_replace_based_edit_tool": {"type": "object", "properties": {
        "command": {"type": "string", "enum": ["view", "create", "str_replace", "insert"]},
        "path": {"type": "string"}}, "required": ["command", "path"]},
    "memory": {"type": "object", "properties": {"command": {"type": "string"}, "path": {"type": "string"}},
               "required": ["command"]},
    "computer": toolsets.COMPUTER_ACTION,
}


@dataclass(frozen=True)
class Translated:
    prompt: Prompt
    thinking: bool  # the answer starts with a thinking block
    show_thinking: bool  # its words are shown (display `summarized`), else only its signature
    budget: int | None  # thinking tokens at most
    stops: tuple[str, ...]
    cached: cache.Use
    toolset_of: dict[str, str]  # a toolset member's name → its family (its tool_use blocks' `toolset_name`)
    compaction: str | None = None  # a compaction request's summary: the answer is one `compaction` block


def _text(content: str | list[dict[str, Any]] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(str(block.get("text", "")) for block in content if isinstance(block, dict))


def _source_url(source: dict[str, Any]) -> str:
    if source.get("type") == "url":
        return str(source.get("url", ""))
    if source.get("type") == "base64":
        return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
    return f"[{source.get('type', 'file')} {source.get('file_id', '')}]".strip()


def system_text(system: str | list[Any] | None) -> str | None:
    if system is None or isinstance(system, str):
        return system or None
    return "\n\n".join(block.text for block in system if isinstance(block, TextBlock)) or None


def _shown(message: Message, later: list[Message]) -> bool:
    """A system message with `clear_at: next_user_message` is shown only until a user turn follows it."""
    return message.clear_at != "next_user_message" or not any(m.role == "user" for m in later)


def _reminder(text: str) -> bool:
    """Context a client adds to the user's turn (Claude Code's `<system-reminder>` blocks): read as system text,
    so the question the backend answers, and a scenario matches, is the user's own."""
    stripped = text.strip()
    return stripped.startswith(REMINDER[0]) and stripped.endswith(REMINDER[1])


def input_items(request: CountTokensRequest) -> list[dict[str, Any]]:
    """The messages as Responses input items: what the shared translator and the backends read."""
    items: list[dict[str, Any]] = []
    for at, message in enumerate(request.messages):
        if message.role == "system":  # instructions where they stand in the conversation, as Claude reads them
            text = system_text(message.content)
            if text and _shown(message, request.messages[at + 1:]):
                items.append({"type": "message", "role": "system", "content": text})
            continue
        blocks = [TextBlock(type="text", text=message.content)] if isinstance(message.content, str) else \
            message.content
        parts: list[dict[str, Any]] = []
        for block in blocks:
            if isinstance(block, TextBlock) and message.role == "user" and _reminder(block.text):
                items.append({"type": "message", "role": "developer", "content": block.text})
            elif isinstance(block, TextBlock):
                parts.append({"type": "input_text", "text": block.text})
            elif isinstance(block, ImageBlock):
                parts.append({"type": "input_image", "image_url": _source_url(block.source)})
            elif isinstance(block, DocumentBlock):
                data = block.source.get("data") if block.source.get("type") == "text" else None
                parts.append({"type": "input_text", "text": data if isinstance(data, str) else
                              f"[document {block.title or _source_url(block.source)}]"})
            elif isinstance(block, SearchResultBlock):
                parts.append({"type": "input_text", "text": _text(block.content)})
            elif isinstance(block, CompactionBlock):  # it stands for the messages it summarized
                items.append({"type": "message", "role": "developer",
                              "content": f"Summary of the conversation so far: {block.content or ''}"})
            elif isinstance(block, ToolUseBlock):
                items.append({"type": "function_call", "call_id": block.id, "name": block.name,
                              "arguments": json.dumps(block.input if block.input is not None else {})})
            elif isinstance(block, ToolResultBlock):
                output = _text(block.content)
                items.append({"type": "function_call_output", "call_id": block.tool_use_id,
                              "output": f"Error: {output}" if block.is_error else output})
            # thinking, redacted_thinking and server blocks: the model's own, nothing a backend reads
        if not parts:
            continue
        if message.role == "assistant":
            items.append({"type": "message", "role": "assistant",
                          "content": "".join(p.get("text", "") for p in parts)})
        else:
            items.append({"type": "message", "role": "user", "content": parts})
    return items


def tools(request: CountTokensRequest) -> list[dict[str, Any]]:
    """Client tools as function tools (a toolset's members by their own names); server tools (web search, code
    execution, MCP, ...) are accepted, not run."""
    out: list[dict[str, Any]] = []
    for tool in request.tools or []:
        if isinstance(tool, Toolset):
            out.extend({"type": "function", "name": name, "description": None, "parameters": schema_,
                        "strict": False} for name, schema_ in toolsets.members(tool.type, tool.configs).items())
            continue
        schema_ = tool.input_schema if isinstance(tool, CustomTool) else _typed_schema(tool)
        if schema_ is None:
            continue
        out.append({"type": "function", "name": tool.name,
                    "description": tool.description if isinstance(tool, CustomTool) else None,
                    "parameters": schema_, "strict": False})
    return out


def _toolset_of(request: CountTokensRequest) -> dict[str, str]:
    return {name: toolsets.family(tool.type) for tool in request.tools or [] if isinstance(tool, Toolset)
            for name in toolsets.members(tool.type, tool.configs)}


def _typed_schema(tool: TypedTool) -> dict[str, Any] | None:
    kind = tool.type or ""
    for name, input_schema in TYPED_TOOLS.items():
        if tool.name == name or kind.startswith(name.split("_")[0] + "_"):
            return input_schema
    return None


def _tool_choice(request: CountTokensRequest) -> tuple[str | dict[str, Any], bool]:
    choice = request.tool_choice
    if choice is None:
        return "auto", True
    parallel = not choice.disable_parallel_tool_use
    if choice.type == "tool":
        if not choice.name:
            raise APIError("tool_choice.name: Field required", param="tool_choice.name")
        if choice.name not in {t["name"] for t in tools(request)} | \
                {t.name for t in request.tools or [] if not isinstance(t, Toolset)}:
            raise APIError(f"Tool '{choice.name}' not found in tools.", param="tool_choice")
        return {"type": "function", "name": choice.name}, parallel
    return {"auto": "auto", "any": "required", "none": "none"}[choice.type], parallel


def _effort(request: CountTokensRequest, max_tokens: int | None) -> str | None:
    thinking = request.thinking
    if thinking is None or thinking.type in ("disabled",):
        return None
    if isinstance(thinking, ThinkingEnabled):
        if max_tokens is not None and thinking.budget_tokens >= max_tokens:
            raise APIError("`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                           "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
                           "#max-tokens-and-context-window-size", param="max_tokens")
        return next((effort for limit, effort in BUDGET_EFFORT if thinking.budget_tokens < limit), "high")
    asked = request.output_config.effort if request.output_config else None
    return EFFORTS[asked] if asked else ADAPTIVE_EFFORT


def check_schemas(request: CountTokensRequest) -> None:
    """The live API's 400 for a tool's `input_schema` or a format's `schema` that is not valid JSON Schema (draft
    2020-12), before anything reads it."""
    for i, tool in enumerate(request.tools or []):
        if isinstance(tool, CustomTool):
            error = schema_error(tool.input_schema, strict=False, require_object=True)
            if error:
                raise APIError(f"tools.{i}.custom.input_schema: {SCHEMA_WORDS} {error}",
                               param=f"tools.{i}.input_schema")
    fmt = request.format_schema
    if fmt is not None:
        error = schema_error(fmt, strict=False, require_object=True)
        if error:
            where = "output_config.format" if request.output_config and request.output_config.format else \
                "output_format"
            raise APIError(f"{where}.schema: {SCHEMA_WORDS} {error}", param=f"{where}.schema")


def responses_body(request: CountTokensRequest, max_tokens: int | None) -> dict[str, Any]:
    check_schemas(request)
    body: dict[str, Any] = {"model": request.model, "input": input_items(request), "tools": tools(request),
                            "store": False}
    body["tool_choice"], body["parallel_tool_calls"] = _tool_choice(request)
    instructions = system_text(request.system)
    if instructions:
        body["instructions"] = instructions
    schema_ = request.format_schema
    if schema_ is not None:  # structured outputs: the same generator as the Responses API's json_schema format
        body["text"] = {"format": {"type": "json_schema", "name": FORMAT_NAME, "schema": schema_, "strict": False}}
    if max_tokens is not None:  # the Responses floor (16) does not apply: the limit is set on the Prompt after
        body["max_output_tokens"] = max(max_tokens, RESPONSES_MIN_OUTPUT)
    return body


def build_prompt(request: CreateRequest, profile: Profile, seed: int | None, owner: str,
                 cached: cache.Entries) -> Translated:
    """The Prompt, with what the event builder needs besides (thinking, stop sequences, cache use)."""
    if request.max_tokens > profile.max_output_tokens:
        raise APIError(f"max_tokens: {request.max_tokens} > {profile.max_output_tokens}, which is the maximum "
                       f"allowed number of output tokens for {request.model}", param="max_tokens")
    effort = _effort(request, request.max_tokens)
    responses = schema.parse(schema.CreateRequest, responses_body(request, request.max_tokens))
    items = translate.normalize_items(responses.input, [])
    prompt = translate.build_prompt(responses, profile, items, seed, effort, "detailed" if effort else None)
    prompt = replace(prompt, input_tokens=corrected(prompt.input_tokens), max_output_tokens=request.max_tokens,
                     temperature=1.0 if request.temperature is None else request.temperature,
                     top_p=1.0 if request.top_p is None else request.top_p,
                     metadata={"user_id": request.metadata.user_id} if request.metadata and
                     request.metadata.user_id else {})
    thinking = request.thinking
    budget = thinking.budget_tokens if isinstance(thinking, ThinkingEnabled) else None
    use = cache.lookup(cached, cache.breakpoints(request, profile.encoding), owner, request.model, prompt.input_tokens)
    prompt = replace(prompt, cached_input_tokens=min(use.read, prompt.input_tokens))
    summary = _summary(input_items(request)) if request.compaction is not None else None
    return Translated(prompt, effort is not None, not (thinking and thinking.display == "omitted"), budget,
                      tuple(request.stop_sequences or ()), use, _toolset_of(request), summary)


def _summary(items: list[dict[str, Any]]) -> str:
    """What a compaction block says of the conversation it replaces: each user turn, in brief."""
    said = [part.get("text", "") for item in items if item.get("role") == "user"
            for part in (item["content"] if isinstance(item.get("content"), list) else [])]
    return "Summary of the conversation so far: the user asked: " + \
        " | ".join(text[:SUMMARY_CHARS] for text in said if text)[:SUMMARY_CHARS * 10]


def count_tokens(request: CountTokensRequest, profile: Profile) -> int:
    """POST /v1/messages/count_tokens: what `input_tokens` would say (before any cache read)."""
    responses = schema.parse(schema.CreateRequest, responses_body(request, None))
    items = translate.normalize_items(responses.input, [])
    instructions = system_text(request.system)
    return corrected(translate.count_input_tokens(items, instructions, translate.echo_tools(responses),
                                                  profile.encoding))
