"""Request + stored history → Prompt, applying the model's rules the way the real API applies them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from llmsim import ids, tokens
from llmsim.errors import APIError
from llmsim.generation import Prompt, Role, Turn
from llmsim.responses import toolspec
from llmsim.responses.schema import CreateRequest, FunctionTool, InputTokensRequest
from llmsim.timing.profiles import Profile

# Chat-format framing the real encodings add around each message and before the reply.
TOKENS_PER_MESSAGE = 4
TOKENS_REPLY_PRIMING = 3
IMAGE_TOKENS = {"low": 85, "high": 765, "auto": 765, "original": 765}


Lookup = Callable[[str], "dict[str, Any] | None"]  # an item of any stored response by id: ResponseStore.find_item


def _none(_: str) -> None:
    return None


def normalize_items(items: list[Any], history: list[dict[str, Any]], lookup: Lookup = _none) -> list[dict[str, Any]]:
    """Request input items as the API stores and lists them: plain dicts, each with an id.

    An `item_reference`, or a reasoning item sent back by id without its `encrypted_content`, must name an
    item of the history, of this input, or of any stored response (`lookup`); else the real API's 404.
    """
    known = {item.get("id"): item for item in history if item.get("id")}

    def find(item_id: str) -> dict[str, Any] | None:
        return known.get(item_id) or lookup(item_id)

    out: list[dict[str, Any]] = []
    for item in items:
        data = item.model_dump(by_alias=True, exclude_none=True)
        data.setdefault("type", "item_reference")  # the only item whose type may be null (the SDK's ItemReference)
        if data["type"] == "item_reference":
            referenced = find(data["id"])
            if referenced is None:
                raise APIError(f"Item with id '{data['id']}' not found.", status=404, param="input")
            out.append(referenced)
            continue
        if data["type"] == "reasoning" and data.get("id") and "encrypted_content" not in data and \
                find(data["id"]) is None:
            raise APIError(f"Item with id '{data['id']}' not found. Items are not persisted when `store` is set to "
                           "false. Try again with `store` set to true, or remove this item from your input.",
                           status=404, param="input")
        if data["type"] == "message":
            data.setdefault("status", "completed")
            data["id"] = data.get("id") or ids.new("msg")
        elif data["type"] in ("function_call", "function_call_output"):
            data.setdefault("status", "completed")
            data["id"] = data.get("id") or ids.new("fc" if data["type"] == "function_call" else "fco")
        else:
            data["id"] = data.get("id") or ids.new("rs" if data["type"] == "reasoning" else "item")
        out.append(data)
        known.setdefault(data["id"], data)  # a later reference finds it without a scan (linear in the input)
    return out


def require_reasoning(items: list[dict[str, Any]], history: list[dict[str, Any]]) -> None:
    """A reasoning model's function call sent back needs the reasoning item that preceded it, as the real API
    requires; its id names that item (see `ids.child`)."""
    seen = {item.get("id") for item in history}
    for item in items:
        required = ids.parent(item.get("id") or "", "rs") if item["type"] == "function_call" else None
        if required and required not in seen:
            raise APIError(f"Item '{item['id']}' of type 'function_call' was provided without its required "
                           f"'reasoning' item: '{required}'.", param="input")
        seen.add(item.get("id"))


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
            role: Role = "system" if item["role"] in ("system", "developer") else item["role"]
            turns.append(Turn(role=role, text="".join(_part_text(p) for p in item["content"])))
        elif kind == "function_call":
            turns.append(Turn("assistant", item["arguments"], kind, item["name"], item["call_id"]))
        elif kind == "function_call_output":
            output = item["output"]
            text = output if isinstance(output, str) else "".join(_part_text(p) for p in output)
            turns.append(Turn("tool", text, kind, call_id=item.get("call_id")))
        elif kind not in ("reasoning", "additional_tools"):  # tools given as an item are tools, not a turn
            turns.append(Turn("assistant", json.dumps(item, sort_keys=True), kind))
    return turns


def count_input_tokens(items: list[dict[str, Any]], instructions: str | None, tools: list[dict[str, Any]],
                       encoding: str) -> int:
    return _fixed_tokens(instructions, tools, encoding) + sum(item_tokens(item, encoding) for item in items)


def _count(text: str, encoding: str, limit: int | None = None) -> int:
    """A chain's history is counted again every turn: short texts' counts are kept (tokens.counts); a long one
    is counted on its own, and may stop past `limit` (tokens.count)."""
    if len(text) <= tokens.CHUNK:
        return tokens.counts.count(text, encoding)
    return tokens.count(text, encoding, limit)


def _fixed_tokens(instructions: str | None, tools: list[dict[str, Any]], encoding: str, limit: int | None = None
                  ) -> int:
    """What every request pays whatever its items: reply priming, instructions, tool definitions."""
    total = TOKENS_REPLY_PRIMING
    if instructions:
        total += TOKENS_PER_MESSAGE + _count(instructions, encoding, limit)
    if tools:
        total += _count(json.dumps(tools, sort_keys=True), encoding, limit)
    return total


def item_tokens(item: dict[str, Any], encoding: str, limit: int | None = None) -> int:
    """One input item's tokens, framing included; past `limit` counting may stop (see tokens.count)."""
    total = 0
    for turn in to_turns([item]):
        total += TOKENS_PER_MESSAGE + _count(turn.text, encoding, limit) + _count(turn.name or "", encoding)
    if item["type"] == "additional_tools":
        total += _count(json.dumps(item.get("tools"), sort_keys=True), encoding, limit)
    for part in item.get("content") or [] if item["type"] == "message" else []:
        if part.get("type") == "input_image":
            total += IMAGE_TOKENS[part.get("detail") or "auto"]
    return total


def _fit(items: list[dict[str, Any]], fixed: int, window: int, truncate: bool, encoding: str
         ) -> tuple[list[dict[str, Any]], int]:
    """The items that go to the model, and the input tokens. Counted newest first so counting stops at the
    window: `truncation: auto` drops the oldest items that do not fit (the newest must), and an input over the
    window fails before the rest of it is tokenized. Linear in the input, and bounded by the window."""
    total, kept = fixed, 0
    for item in reversed(items):
        count = item_tokens(item, encoding, limit=max(0, window - total))
        if total + count > window and truncate and kept:
            break
        total += count
        if total > window:
            break
        kept += 1
    if total > window:
        raise APIError(
            "Your input exceeds the context window of this model. Please adjust your input and try again.",
            param="input", code="context_length_exceeded",
        )
    return items[len(items) - kept:], total


# A function tool's fields the Response echoes even when null; its other optional fields only when set.
ECHOED_NULLS = frozenset({"description", "parameters", "strict"})


def echo_tools(request: CreateRequest | InputTokensRequest) -> list[dict[str, Any]]:
    """Tools as the Response echoes them: function tools with their defaults filled in."""
    return [{k: v for k, v in tool.model_dump(by_alias=True).items() if v is not None or k in ECHOED_NULLS}
            if isinstance(tool, FunctionTool) else tool.model_dump(by_alias=True, exclude_none=True)
            for tool in request.tools]


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
        value = getattr(request, param)
        if value is not None and value != 1 and not profile.sampling_always and not (
                profile.sampling_with_reasoning and effort == "none"):
            raise APIError(f"Unsupported value: '{param}' does not support {value:g} with this model. Only the "
                           "default (1) value is supported.", param=param, code="unsupported_value")
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
    offered = toolspec.offered(tools, items)
    toolspec.check_choice(request.tool_choice_data, offered)
    if request.max_output_tokens is not None and request.max_output_tokens > profile.max_output_tokens:
        raise APIError(
            f"Invalid 'max_output_tokens': integer above maximum value. Expected a value <= "
            f"{profile.max_output_tokens}, but got {request.max_output_tokens} instead.",
            param="max_output_tokens", code="integer_above_max_value",
        )
    if isinstance(request.instructions, list):
        items = normalize_items(request.instructions, []) + items
    fixed = _fixed_tokens(instructions, tools, profile.encoding, limit=profile.context_window)
    items, input_tokens = _fit(items, fixed, profile.context_window, request.truncation == "auto", profile.encoding)
    turns = ([Turn("system", instructions)] if instructions else []) + to_turns(items)
    return Prompt(
        model=request.model,
        profile=profile,
        turns=turns,
        input_tokens=input_tokens,
        tools=offered,
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
