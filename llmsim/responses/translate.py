"""Request + stored history → Prompt, applying the model's rules the way the real API applies them."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from llmsim import ids, tokens
from llmsim.backends.base import Prompt, Turn
from llmsim.errors import APIError
from llmsim.responses.schema import CreateRequest, FunctionTool, InputTokensRequest
from llmsim.timing.profiles import Profile

# Chat-format framing the real encodings add around each message and before the reply.
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3
IMAGE_TOKENS = {"low": 85, "high": 765, "auto": 765, "original": 765}


def normalize_items(items: list[Any], history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Request input items as the API stores and lists them: plain dicts, each with an id."""
    known = {item.get("id"): item for item in history if item.get("id")}
    out: list[dict[str, Any]] = []
    for item in items:
        data = item.model_dump(by_alias=True, exclude_none=True)
        if data["type"] == "item_reference":
            referenced = known.get(data["id"]) or next((i for i in out if i.get("id") == data["id"]), None)
            if referenced is None:
                raise APIError(f"Item with id '{data['id']}' not found.", status=404, param="input")
            out.append(referenced)
            continue
        if data["type"] == "message":
            data.setdefault("status", "completed")
            data["id"] = data.get("id") or ids.new("msg")
        elif data["type"] in ("function_call", "function_call_output"):
            data.setdefault("status", "completed")
            data["id"] = data.get("id") or ids.new("fc" if data["type"] == "function_call" else "fco")
        else:
            data["id"] = data.get("id") or ids.new("rs" if data["type"] == "reasoning" else "item")
        out.append(data)
    return out


def _part_text(part: dict[str, Any]) -> str:
    kind = part.get("type")
    if kind in ("input_text", "output_text"):
        return part["text"]
    if kind == "refusal":
        return part["refusal"]
    if kind == "input_file":
        return f"[file {part.get('filename') or part.get('file_id') or ''}]"
    return ""


def to_turns(items: list[dict[str, Any]]) -> list[Turn]:
    turns: list[Turn] = []
    for item in items:
        kind = item["type"]
        if kind == "message":
            role = "system" if item["role"] in ("system", "developer") else item["role"]
            turns.append(Turn(role=role, text="".join(_part_text(p) for p in item["content"])))
        elif kind == "function_call":
            turns.append(Turn("assistant", item["arguments"], kind, item["name"], item["call_id"]))
        elif kind == "function_call_output":
            output = item["output"]
            text = output if isinstance(output, str) else "".join(_part_text(p) for p in output)
            turns.append(Turn("tool", text, kind, call_id=item["call_id"]))
        elif kind != "reasoning":
            turns.append(Turn("assistant", json.dumps(item, sort_keys=True), kind))
    return turns


def count_input_tokens(items: list[dict[str, Any]], instructions: str | None, tools: list[dict[str, Any]],
                       encoding: str) -> int:
    count = tokens.counts.count  # a chain's history is counted again every turn: its texts' counts are kept
    total = TOKENS_REPLY_PRIMING
    if instructions:
        total += TOKENS_PER_MESSAGE + count(instructions, encoding)
    for turn in to_turns(items):
        total += TOKENS_PER_MESSAGE + count(turn.text, encoding) + count(turn.name or "", encoding)
    for item in items:
        for part in item.get("content") or [] if item["type"] == "message" else []:
            if part.get("type") == "input_image":
                total += IMAGE_TOKENS[part.get("detail") or "auto"]
    if tools:
        total += count(json.dumps(tools, sort_keys=True), encoding)
    return total


def echo_tools(request: CreateRequest | InputTokensRequest) -> list[dict[str, Any]]:
    """Tools as the Response echoes them: function tools with their defaults filled in."""
    return [tool.model_dump(by_alias=True, exclude_none=not isinstance(tool, FunctionTool)) for tool in request.tools]


def _unsupported(param: str) -> APIError:
    return APIError(f"Unsupported parameter: '{param}' is not supported with this model.", param=param,
                    code="unsupported_parameter")


def resolve_reasoning(request: CreateRequest, profile: Profile) -> tuple[str | None, str | None]:
    """(effort, summary) in force, or the 400 the real API gives for this model."""
    asked = request.reasoning
    summary = asked and (asked.summary or asked.generate_summary)
    spec = profile.reasoning
    if spec is None:
        if asked and asked.effort is not None:
            raise _unsupported("reasoning.effort")
        if summary:
            raise _unsupported("reasoning.summary")
        return None, None
    effort = (asked and asked.effort) or spec.default
    if effort not in spec.efforts:
        allowed = [f"'{e}'" for e in spec.efforts]
        listed = ", ".join(allowed[:-1]) + f", and {allowed[-1]}" if len(allowed) > 1 else allowed[0]
        raise APIError(
            f"Unsupported value: 'reasoning.effort' does not support '{effort}' with this model. "
            f"Supported values are: {listed}.", param="reasoning.effort", code="unsupported_value",
        )
    for param in ("temperature", "top_p"):
        if getattr(request, param) is not None and not profile.sampling_always and not (
                profile.sampling_with_reasoning and effort == "none"):
            raise _unsupported(param)
    return effort, summary or None


def _seed(base: int | None, model: str, turns: list[Turn], instructions: str | None) -> int | None:
    if base is None:
        return None
    digest = hashlib.sha256(json.dumps([base, model, instructions, [t.__dict__ for t in turns]]).encode())
    return int.from_bytes(digest.digest()[:8], "big")


def build_prompt(request: CreateRequest, profile: Profile, items: list[dict[str, Any]], seed: int | None,
                 effort: str | None, summary: str | None) -> Prompt:
    """The Prompt for `items` (history and input), with `effort`/`summary` from resolve_reasoning."""
    instructions = request.instructions if isinstance(request.instructions, str) else None
    tools = echo_tools(request)
    if request.max_output_tokens is not None and request.max_output_tokens > profile.max_output_tokens:
        raise APIError(
            f"Invalid 'max_output_tokens': integer above maximum value. Expected a value <= "
            f"{profile.max_output_tokens}, but got {request.max_output_tokens} instead.",
            param="max_output_tokens", code="integer_above_max_value",
        )
    if isinstance(request.instructions, list):
        items = normalize_items(request.instructions, []) + items
    input_tokens = count_input_tokens(items, instructions, tools, profile.encoding)
    while input_tokens > profile.context_window and request.truncation == "auto" and len(items) > 1:
        items = items[1:]
        input_tokens = count_input_tokens(items, instructions, tools, profile.encoding)
    if input_tokens > profile.context_window:
        raise APIError(
            f"Your input exceeds the context window of this model ({input_tokens} > {profile.context_window} "
            "tokens). Please adjust your input and try again.", param="input", code="context_length_exceeded",
        )
    turns = ([Turn("system", instructions)] if instructions else []) + to_turns(items)
    return Prompt(
        model=request.model,
        profile=profile,
        turns=turns,
        input_tokens=input_tokens,
        tools=tools,
        tool_choice=request.tool_choice_data,
        parallel_tool_calls=request.parallel_tool_calls,
        max_tool_calls=request.max_tool_calls,
        text_format=request.text.format.model_dump(by_alias=True, exclude_none=True),
        verbosity=request.text.verbosity,
        temperature=1.0 if request.temperature is None else request.temperature,
        top_p=1.0 if request.top_p is None else request.top_p,
        top_logprobs=request.top_logprobs or 0,
        logprobs="message.output_text.logprobs" in request.include,
        max_output_tokens=request.max_output_tokens,
        reasoning_effort=None if effort == "none" else effort,
        reasoning_summary=summary if effort not in (None, "none") else None,
        seed=_seed(seed, request.model, turns, instructions),
        metadata=request.metadata or {},
        include=tuple(request.include),
    )
