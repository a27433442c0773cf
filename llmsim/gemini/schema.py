"""Request shapes of the Gemini API (generateContent, countTokens, embedContent), as google-genai sends them: camelCase
names, and the proto names (snake_case) the REST API accepts too.

Closed where a mistake changes the meaning (part kinds, roles, modes), open where the API grows fastest (a new
tool, a new generation knob is accepted and reported under the forward-compatibility policy,
llmsim/shared/compat.py). Errors read as Google's: `Invalid JSON payload received. Unknown name "tempratur" at
'generation_config': Cannot find field.`
"""

from __future__ import annotations

import copy
import re
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import ErrorDetails

from llmsim.errors import APIError
from llmsim.shared import compat


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True, defer_build=True)


class Blob(Closed):
    mime_type: str = ""
    data: str = ""
    display_name: str | None = None


class FileData(Closed):
    mime_type: str | None = None
    file_uri: str
    display_name: str | None = None


class FunctionCall(Closed):
    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    id: str | None = None
    partial_args: list[dict[str, Any]] | None = None
    will_continue: bool | None = None


class FunctionResponse(Closed):
    name: str = Field(min_length=1)
    response: dict[str, Any] | None = None
    id: str | None = None
    parts: list[dict[str, Any]] | None = None
    will_continue: bool | None = None
    scheduling: str | None = None


class Part(Closed):
    """One part: exactly one of its data fields (text, inlineData, fileData, functionCall, functionResponse,
    executableCode, codeExecutionResult), with `thought` marking the model's own thinking."""

    text: str | None = None
    inline_data: Blob | None = None
    file_data: FileData | None = None
    function_call: FunctionCall | None = None
    function_response: FunctionResponse | None = None
    executable_code: dict[str, Any] | None = None
    code_execution_result: dict[str, Any] | None = None
    thought: bool | None = None
    thought_signature: str | None = None
    video_metadata: dict[str, Any] | None = None
    media_resolution: dict[str, Any] | None = None
    part_metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> Part:
        kinds = [name for name in DATA_FIELDS if getattr(self, name) is not None]
        if len(kinds) > 1:
            raise ValueError(f"only one of {', '.join(kinds)} may be set in a part")
        return self


class Content(Closed):
    role: Literal["user", "model", "function", "tool", ""] | None = None
    parts: list[Part] | None = None


class FunctionDeclaration(Closed):
    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    parameters: dict[str, Any] | None = None  # the OpenAPI subset (upper-case types)
    parameters_json_schema: Any = None  # JSON Schema as it is
    response: dict[str, Any] | None = None
    response_json_schema: Any = None
    behavior: str | None = None


class Tool(Closed):
    function_declarations: list[FunctionDeclaration] | None = None
    google_search: dict[str, Any] | None = None
    google_search_retrieval: dict[str, Any] | None = None
    code_execution: dict[str, Any] | None = None
    url_context: dict[str, Any] | None = None
    file_search: dict[str, Any] | None = None
    google_maps: dict[str, Any] | None = None
    computer_use: dict[str, Any] | None = None
    retrieval: dict[str, Any] | None = None
    enterprise_web_search: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] | None = None


class FunctionCallingConfig(Closed):
    mode: Literal["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"] | None = None
    allowed_function_names: list[str] | None = None
    stream_function_call_arguments: bool | None = None


class ToolConfig(Closed):
    function_calling_config: FunctionCallingConfig | None = None
    retrieval_config: dict[str, Any] | None = None


class ThinkingConfig(Closed):
    include_thoughts: bool | None = None
    thinking_budget: int | None = None
    thinking_level: Literal["THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH"] | None = None


class GenerationConfig(Closed):
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: float | None = Field(None, ge=0)
    candidate_count: int | None = Field(None, ge=1, le=8)
    max_output_tokens: int | None = Field(None, ge=1)
    stop_sequences: list[str] | None = Field(None, max_length=5)
    seed: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    response_logprobs: bool | None = None
    logprobs: int | None = None
    response_mime_type: str | None = None
    response_schema: dict[str, Any] | None = None
    response_json_schema: Any = None
    response_modalities: list[str] | None = None
    thinking_config: ThinkingConfig | None = None
    media_resolution: str | None = None
    speech_config: dict[str, Any] | None = None
    image_config: dict[str, Any] | None = None
    enable_enhanced_civic_answers: bool | None = None
    audio_timestamp: bool | None = None
    routing_config: dict[str, Any] | None = None
    model_selection_config: dict[str, Any] | None = None
    enable_affective_dialog: bool | None = None


class SafetySetting(Closed):
    category: str
    threshold: str | None = None
    method: str | None = None


class GenerateContentRequest(Closed):
    model: str | None = None  # the URL names it; a body may repeat it (batch requests do)
    contents: list[Content] = Field(default_factory=list)
    system_instruction: Content | None = None
    tools: list[Tool] | None = None
    tool_config: ToolConfig | None = None
    generation_config: GenerationConfig | None = None
    safety_settings: list[SafetySetting] | None = None
    cached_content: str | None = None
    labels: dict[str, str] | None = None
    service_tier: str | None = None
    store: bool | None = None


DATA_FIELDS = ("text", "inline_data", "file_data", "function_call", "function_response", "executable_code",
               "code_execution_result")


class CountTokensRequest(Closed):
    contents: list[Content] | None = None
    generate_content_request: GenerateContentRequest | None = None


class EmbedContentRequest(Closed):
    model: str | None = None
    content: Content
    task_type: Literal["TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY", "RETRIEVAL_DOCUMENT", "SEMANTIC_SIMILARITY",
                       "CLASSIFICATION", "CLUSTERING", "QUESTION_ANSWERING", "FACT_VERIFICATION",
                       "CODE_RETRIEVAL_QUERY"] | None = None
    title: str | None = None
    output_dimensionality: int | None = None
    auto_truncate: bool | None = None


class BatchEmbedContentsRequest(Closed):
    requests: list[EmbedContentRequest] = Field(min_length=1, max_length=100)


M = TypeVar("M", bound=BaseModel)
MAX_FORGIVEN = compat.MAX_FORGIVEN
REQUESTS = {GenerateContentRequest: "GenerateContentRequest", CountTokensRequest: "CountTokensRequest",
            EmbedContentRequest: "EmbedContentRequest", BatchEmbedContentsRequest: "BatchEmbedContentsRequest"}
PROTO_TYPES = {"float_parsing": "TYPE_FLOAT", "float_type": "TYPE_FLOAT", "int_parsing": "TYPE_INT32",
               "int_type": "TYPE_INT32", "int_from_float": "TYPE_INT32", "bool_parsing": "TYPE_BOOL",
               "bool_type": "TYPE_BOOL", "string_type": "TYPE_STRING"}


def parse(model: type[M], body: Any, lenient: list[str] | None = None) -> M:
    """`body` as `model`, or Google's 400. `lenient`: where to report an unknown name or enum value, dropped
    (None: strict, Google's 400 for them)."""
    if not isinstance(body, dict):
        raise invalid("Invalid JSON payload received. Expected an object.")
    copied = False
    for _ in range(MAX_FORGIVEN):
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            errors = exc.errors()
            if lenient is None:
                raise _error(model, errors[0]) from None
            if not copied:
                body, copied = copy.deepcopy(body), True
            found = [w for e in errors if e["type"] in ("extra_forbidden", "literal_error")
                     and (w := compat.forgive(body, e, frozenset()))]
            if not found:
                raise _error(model, errors[0]) from None
            lenient.extend(w for w in dict.fromkeys(found) if w not in lenient)
            del lenient[compat.MAX_WARNINGS:]
    return model.model_validate(body)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _path(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not _branch(part):
            out += ("." if out else "") + _snake(str(part))
    return out


def _branch(part: Any) -> bool:
    return isinstance(part, str) and (part in ("str", "int", "float", "bool", "list") or "[" in part
                                      or part.startswith(("function-", "literal")))


def _error(model: type[BaseModel], error: ErrorDetails) -> APIError:
    kind, loc = error["type"], error["loc"]
    where = _path(loc)
    if kind == "extra_forbidden":
        parent, name = _path(loc[:-1]), loc[-1]
        at = f" at '{parent}'" if parent else ""
        return invalid(f'Invalid JSON payload received. Unknown name "{name}"{at}: Cannot find field.', where)
    if kind == "literal_error":
        return invalid(f"Invalid value at '{where}' (enum), \"{error.get('input')}\"", where)
    if kind in PROTO_TYPES:
        return invalid(f"Invalid value at '{where}' ({PROTO_TYPES[kind]}), {_shown(error.get('input'))}", where)
    if kind == "missing":
        return invalid(f"* {REQUESTS.get(model, model.__name__)}.{where}: {where.rsplit('.', 1)[-1]} is not "
                       "specified\n", where)
    if kind == "value_error":
        said = error["msg"].removeprefix("Value error, ")
        return invalid(f"* {REQUESTS.get(model, model.__name__)}.{where}: {said}\n", where)
    return invalid(f"* {REQUESTS.get(model, model.__name__)}.{where}: {error['msg']}\n", where)


def _shown(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else str(value).lower() if isinstance(value, bool) else \
        type(value).__name__ if isinstance(value, (dict, list)) else str(value)


def invalid(message: str, field: str | None = None) -> APIError:
    """Google's INVALID_ARGUMENT (a 400), naming the field at fault in its BadRequest details."""
    return APIError(message, status=400, type="INVALID_ARGUMENT", param=field or None)
