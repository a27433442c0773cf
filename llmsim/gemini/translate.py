"""A Gemini request → the pipeline's Prompt: rewritten as the Responses request it means (systemInstruction →
instructions, contents → input items, functionDeclarations → function tools, toolConfig → tool_choice), so the
one translator applies the same rules (context window, tool plans, seeds); then the Gemini-only parts on top
(thinking, JSON answers by schema, stop sequences, candidates)."""

from __future__ import annotations

import json
from collections import defaultdict, deque
from dataclasses import dataclass, replace
from typing import Any

from llmsim.errors import APIError
from llmsim.gemini.schema import Content, FunctionDeclaration, GenerateContentRequest, ThinkingConfig, invalid
from llmsim.generation import Prompt
from llmsim.responses import schema, translate
from llmsim.shared.schema_checks import schema_error
from llmsim.timing.profiles import Profile

RESPONSES_MIN_OUTPUT = 16
# A thinking budget → the simulator's reasoning effort (how much it thinks before answering).
BUDGET_EFFORT = ((1024, "low"), (8192, "medium"))
LEVELS = {"MINIMAL": "minimal", "LOW": "low", "MEDIUM": "medium", "HIGH": "high"}
JSON_TYPES = {"STRING": "string", "NUMBER": "number", "INTEGER": "integer", "BOOLEAN": "boolean", "ARRAY": "array",
              "OBJECT": "object", "NULL": "null"}
SCHEMA_WORDS = ("description", "enum", "format", "title", "default", "minimum", "maximum", "minItems", "maxItems",
                "minLength", "maxLength", "pattern", "minProperties", "maxProperties", "required")
MAX_SCHEMA_DEPTH = 64


@dataclass(frozen=True)
class Translated:
    prompt: Prompt
    thinks: bool  # the model thinks before it answers
    show_thoughts: bool  # includeThoughts: the thinking's summary comes as `thought` parts
    budget: int | None  # thinking tokens at most
    stops: tuple[str, ...]
    candidates: int
    json_answer: bool  # responseMimeType application/json


def json_schema(node: Any, depth: int = 0) -> Any:
    """Gemini's OpenAPI subset (upper-case types, `nullable`, `propertyOrdering`) as JSON Schema."""
    if depth > MAX_SCHEMA_DEPTH:
        raise invalid("* GenerateContentRequest: schema nesting is too deep\n")
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    kind = node.get("type")
    if isinstance(kind, str) and kind.upper() in JSON_TYPES:
        out["type"] = JSON_TYPES[kind.upper()]
        if node.get("nullable"):
            out["type"] = [out["type"], "null"]
    for word in SCHEMA_WORDS:
        if word in node:
            out[word] = node[word]
    if isinstance(node.get("properties"), dict):
        out["properties"] = {name: json_schema(value, depth + 1) for name, value in node["properties"].items()}
    if "items" in node:
        out["items"] = json_schema(node["items"], depth + 1)
    if isinstance(node.get("anyOf"), list):
        out["anyOf"] = [json_schema(value, depth + 1) for value in node["anyOf"]]
    return out


def _function_tool(declaration: FunctionDeclaration) -> dict[str, Any]:
    parameters = declaration.parameters_json_schema if declaration.parameters_json_schema is not None else \
        json_schema(declaration.parameters) if declaration.parameters else {"type": "object", "properties": {}}
    if isinstance(parameters, dict) and "type" not in parameters:
        parameters = {"type": "object", **parameters}
    return {"type": "function", "name": declaration.name, "description": declaration.description,
            "parameters": parameters, "strict": False}


def tools(request: GenerateContentRequest) -> list[dict[str, Any]]:
    """Function declarations as function tools (their parameters a valid object schema), and googleSearch as a web
    search (its answer grounded: `groundingMetadata`); Google's other tools (codeExecution, urlContext, ...) are
    accepted and not run."""
    out = [_function_tool(d) for tool in request.tools or [] for d in tool.function_declarations or []]
    for tool in out:
        problem = schema_error(tool["parameters"], strict=False, require_object=True)
        if problem:
            raise invalid(f"* GenerateContentRequest.tools[0].function_declarations: {tool['name']}: parameters: "
                          f"{problem}\n", "tools")
    if any(tool.google_search is not None or tool.google_search_retrieval is not None for tool in request.tools or []):
        out.append({"type": "web_search"})  # the simulator searches as for the Responses API's web search
    return out


def _text(content: Content | None) -> str:
    return "\n".join(part.text for part in (content.parts or []) if part.text and not part.thought) \
        if content is not None else ""


def _blob_part(mime: str, url: str, name: str | None) -> dict[str, Any]:
    if mime.startswith("image/"):
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return {"type": "input_text", "text": f"[{mime or 'file'} {name or ''}]".replace(" ]", "]")}


def input_items(contents: list[Content]) -> list[dict[str, Any]]:
    """The contents as Responses input items: a function response answers the earliest open call of its name."""
    items: list[dict[str, Any]] = []
    open_calls: defaultdict[str, deque[str]] = defaultdict(deque)
    count = 0
    for turn, content in enumerate(contents):
        if not content.parts:
            raise invalid(f"* GenerateContentRequest.contents[{turn}].parts: contents.parts must not be empty.\n",
                          f"contents[{turn}].parts")
        model = content.role == "model"
        parts: list[dict[str, Any]] = []
        for part in content.parts:
            if part.thought:
                continue  # the model's own thinking: nothing a backend reads
            if part.text is not None:
                parts.append({"type": "output_text" if model else "input_text", "text": part.text})
            elif part.inline_data is not None:
                blob = part.inline_data
                parts.append(_blob_part(blob.mime_type, f"data:{blob.mime_type};base64,{blob.data}",
                                        blob.display_name))
            elif part.file_data is not None:
                file = part.file_data
                parts.append(_blob_part(file.mime_type or "", file.file_uri, file.display_name or file.file_uri))
            elif part.function_call is not None:
                call = part.function_call
                count += 1
                call_id = call.id or f"call_{count}_{call.name}"
                open_calls[call.name].append(call_id)
                items.append({"type": "function_call", "call_id": call_id, "name": call.name,
                              "arguments": json.dumps(call.args or {})})
            elif part.function_response is not None:
                answer = part.function_response
                pending = open_calls[answer.name]
                call_id = answer.id if answer.id and answer.id in pending else pending[0] if pending else \
                    answer.id or f"call_{answer.name}"
                if call_id in pending:
                    pending.remove(call_id)
                items.append({"type": "function_call_output", "call_id": call_id,
                              "output": json.dumps(answer.response if answer.response is not None else {})})
            elif part.executable_code is not None or part.code_execution_result is not None:
                said = part.executable_code or part.code_execution_result or {}
                parts.append({"type": "output_text" if model else "input_text",
                              "text": str(said.get("code") or said.get("output") or "")})
        if not parts:
            continue
        if model:
            items.append({"type": "message", "role": "assistant",
                          "content": "".join(p.get("text", "") for p in parts)})
        else:
            items.append({"type": "message", "role": "user", "content": parts})
    return items


def _tool_choice(request: GenerateContentRequest, offered: list[dict[str, Any]]) -> str | dict[str, Any]:
    config = request.tool_config.function_calling_config if request.tool_config else None
    mode = (config.mode if config else None) or "AUTO"
    names = list(config.allowed_function_names or []) if config else []
    if names and mode not in ("ANY", "VALIDATED"):
        raise invalid("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: "
                      "allowed_function_names is only allowed when mode is ANY or VALIDATED.\n",
                      "tool_config.function_calling_config.allowed_function_names")
    functions = [tool for tool in offered if tool["type"] == "function"]
    declared = {tool["name"] for tool in functions}
    for name in names:
        if name not in declared:
            raise invalid(f"* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: "
                          f"{name} is not a declared function.\n",
                          "tool_config.function_calling_config.allowed_function_names")
    if not functions or mode == "NONE":
        return "none" if functions else "auto"
    if mode == "ANY" and len(names) == 1:
        return {"type": "function", "name": names[0]}
    if names:
        return {"type": "allowed_tools", "mode": "required" if mode == "ANY" else "auto",
                "tools": [{"type": "function", "name": name} for name in names]}
    return "required" if mode == "ANY" else "auto"


def effort(config: ThinkingConfig | None, profile: Profile) -> str | None:
    """The simulator's effort for `thinkingConfig` on this model (None: it does not think), or the API's 400."""
    spec = profile.reasoning
    budget = config.thinking_budget if config else None
    level = config.thinking_level if config and config.thinking_level != "THINKING_LEVEL_UNSPECIFIED" else None
    if budget is not None and level is not None:
        raise invalid("You can only set only one of thinking budget and thinking level.",
                      "generation_config.thinking_config")
    if spec is None:
        if (budget or level) and budget != 0:
            raise invalid("Thinking is not enabled for this model.", "generation_config.thinking_config")
        return None
    if budget == 0:
        if "none" not in spec.efforts:
            raise invalid("Budget 0 is invalid. This model only works in thinking mode.",
                          "generation_config.thinking_config.thinking_budget")
        return None
    if level is not None:
        wanted = LEVELS[level]
        if wanted not in spec.efforts:
            wanted = min((e for e in spec.efforts if e != "none"), key=lambda e: abs(_rank(e) - _rank(wanted)))
        return wanted
    if budget is None or budget < 0:
        return None if spec.default == "none" else spec.default
    return next((e for limit, e in BUDGET_EFFORT if budget <= limit), "high")


def _rank(effort: str) -> int:
    return ("minimal", "low", "medium", "high").index(effort) if effort in LEVELS.values() else 2


def responses_body(request: GenerateContentRequest, model: str, offered: list[dict[str, Any]]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "input": input_items(request.contents), "tools": offered,
                            "store": False, "tool_choice": _tool_choice(request, offered)}
    instructions = _text(request.system_instruction)
    if instructions:
        body["instructions"] = instructions
    config = request.generation_config
    if config is not None and config.max_output_tokens is not None:
        body["max_output_tokens"] = max(config.max_output_tokens, RESPONSES_MIN_OUTPUT)
    return body


def text_format(request: GenerateContentRequest) -> dict[str, Any] | None:
    """responseMimeType application/json: JSON by `responseJsonSchema` or `responseSchema`, else any object."""
    config = request.generation_config
    if config is None:
        return None
    if (config.response_schema is not None or config.response_json_schema is not None) and \
            config.response_mime_type not in ("application/json", "text/x.enum"):
        raise invalid("* GenerateContentRequest.generation_config.response_mime_type: response_mime_type must "
                      "be application/json or text/x.enum when response_schema is set.\n",
                      "generation_config.response_mime_type")
    if config.response_mime_type != "application/json":
        return None
    given = config.response_json_schema if config.response_json_schema is not None else \
        json_schema(config.response_schema) if config.response_schema is not None else None
    if given is None:
        return {"type": "json_object"}
    problem = "the schema must be an object" if not isinstance(given, dict) else \
        schema_error(given, strict=False, require_object=False)  # any JSON type: Gemini answers arrays, strings
    if problem:
        raise invalid(f"* GenerateContentRequest.generation_config.response_schema: {problem}\n",
                      "generation_config.response_schema")
    return {"type": "json_schema", "name": "response", "schema": given, "strict": False}


def build_prompt(request: GenerateContentRequest, model: str, profile: Profile, seed: int | None) -> Translated:
    """The Prompt, with what the builder needs besides (thinking, stop sequences, candidates)."""
    config = request.generation_config
    if not request.contents:
        raise invalid("* GenerateContentRequest.contents: contents is not specified\n", "contents")
    limit = config.max_output_tokens if config else None
    if limit is not None and limit > profile.max_output_tokens:
        raise invalid(f"The requested max_output_tokens ({limit}) exceeds the maximum ({profile.max_output_tokens}) "
                      f"for {model}.", "generation_config.max_output_tokens")
    thinking = config.thinking_config if config else None
    chosen = effort(thinking, profile)
    show = bool(thinking and thinking.include_thoughts) and chosen is not None
    offered = tools(request)
    try:
        responses = schema.parse(schema.CreateRequest, responses_body(request, model, offered))
    except APIError as error:  # the shared translator's words for what the client sent Gemini's way
        raise invalid(error.message) from None
    items = translate.normalize_items(responses.input, [])
    prompt = translate.build_prompt(responses, profile, items, seed if config is None or config.seed is None else
                                    config.seed, chosen, "detailed" if show else ("auto" if chosen else None))
    answer_format = text_format(request)
    prompt = replace(prompt, max_output_tokens=limit,
                     temperature=1.0 if config is None or config.temperature is None else config.temperature,
                     top_p=0.95 if config is None or config.top_p is None else config.top_p,
                     text_format=answer_format or prompt.text_format)
    budget = thinking.thinking_budget if thinking and thinking.thinking_budget and \
        thinking.thinking_budget > 0 else None
    return Translated(prompt, chosen is not None, show, budget,
                      tuple(s for s in (config.stop_sequences or []) if s) if config else (),
                      (config.candidate_count or 1) if config else 1, answer_format is not None)


def count_tokens(request: GenerateContentRequest, model: str, profile: Profile) -> int:
    """countTokens: what `promptTokenCount` would say."""
    offered = tools(request)
    try:
        responses = schema.parse(schema.CreateRequest, responses_body(request, model, offered))
    except APIError as error:
        raise invalid(error.message) from None
    items = translate.normalize_items(responses.input, [])
    return translate.count_input_tokens(items, _text(request.system_instruction) or None,
                                        translate.echo_tools(responses), profile.encoding)
