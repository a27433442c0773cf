"""Request shapes for POST /responses, validated with pydantic and reported as the real API reports them.

Field names follow the official SDK's `ResponseCreateParams`. Models are strict
(no "1" for 1) and forbid unknown keys, so a typo fails loudly the way
api.openai.com fails it: `Unknown parameter: 'input[0].contnet'.`
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, NoReturn, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, ValidationError, field_validator, model_validator
from pydantic_core import ErrorDetails

from llmsim.errors import APIError
from llmsim.shared import compat

Effort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max", "ultra"]  # ultra: Codex CLI's newest
Includable = Literal[
    "file_search_call.results",
    "web_search_call.results",
    "web_search_call.action.sources",
    "message.input_image.image_url",
    "computer_call_output.output.image_url",
    "code_interpreter_call.outputs",
    "reasoning.encrypted_content",
    "message.output_text.logprobs",
]


class Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Open(BaseModel):
    """Shapes we accept as the SDK sends them and carry through without interpreting every field."""

    model_config = ConfigDict(strict=True, extra="allow")


# --- content parts -----------------------------------------------------------------------------


class CacheBreakpoint(Strict):
    mode: Literal["explicit"]
    ttl: Literal["30m", "12h"] | None = None


class InputText(Strict):
    type: Literal["input_text"]
    text: str
    prompt_cache_breakpoint: CacheBreakpoint | None = None


class InputImage(Strict):
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto", "original"] | None = "auto"  # null: the default, as the SDK allows
    prompt_cache_breakpoint: CacheBreakpoint | None = None


class InputFile(Strict):
    type: Literal["input_file"]
    file_id: str | None = None
    file_data: str | None = None
    file_url: str | None = None
    filename: str | None = None
    detail: Literal["low", "high", "auto"] | None = None
    prompt_cache_breakpoint: CacheBreakpoint | None = None


class OutputText(Strict):
    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, Any]] = Field(default_factory=list)
    logprobs: list[dict[str, Any]] | None = None


class Refusal(Strict):
    type: Literal["refusal"]
    refusal: str


ContentPart = Annotated[
    InputText | InputImage | InputFile | OutputText | Refusal, Field(discriminator="type")
]


# --- input items -------------------------------------------------------------------------------


class Message(Strict):
    type: Literal["message"] = "message"
    role: Literal["user", "assistant", "system", "developer"]
    content: list[ContentPart]
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None
    phase: str | None = None

    @field_validator("content", mode="before")
    @classmethod
    def _string_content(cls, value: Any, info: Any) -> Any:
        if isinstance(value, str):
            kind = "output_text" if info.data.get("role") == "assistant" else "input_text"
            return [{"type": kind, "text": value}]
        return value


class Caller(Strict):
    """Who called a tool: the model directly, or a program it wrote (programmatic tool calling)."""

    type: Literal["direct", "program"]
    caller_id: str | None = None


class FunctionCall(Strict):
    type: Literal["function_call"]
    call_id: str
    name: str
    arguments: str
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None
    namespace: str | None = None
    caller: Caller | None = None
    async_: bool | None = Field(None, alias="async")


class FunctionCallOutput(Strict):
    type: Literal["function_call_output"]
    call_id: str | None = None  # optional in the SDK's type
    output: str | list[ContentPart]
    id: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None
    name: str | None = None
    namespace: str | None = None
    caller: Caller | None = None


class SummaryText(Strict):
    type: Literal["summary_text"]
    text: str


class Reasoning(Strict):
    type: Literal["reasoning"]
    id: str | None = None
    summary: list[SummaryText] = Field(default_factory=list)
    content: list[dict[str, Any]] | None = None
    encrypted_content: str | None = None
    status: Literal["in_progress", "completed", "incomplete"] | None = None


class ItemReference(Strict):
    type: Literal["item_reference"] | None = "item_reference"
    id: str


OTHER_ITEM_TYPES = frozenset(
    {
        "file_search_call", "computer_call", "computer_call_output", "web_search_call",
        "tool_search_call", "tool_search_output", "image_generation_call", "code_interpreter_call",
        "local_shell_call", "local_shell_call_output", "shell_call", "shell_call_output",
        "apply_patch_call", "apply_patch_call_output", "mcp_list_tools", "mcp_approval_request",
        "mcp_approval_response", "mcp_call", "custom_tool_call", "custom_tool_call_output",
        "compaction", "compaction_trigger", "configuration_update", "additional_tools", "program", "program_output",
    }
)


class OtherItem(Open):
    """Built-in tool items coming back as history: kept as sent (an id, when given, is a string: items are
    found by it)."""

    type: str
    id: str | None = None


ITEM_TAGS = {"message", "function_call", "function_call_output", "reasoning", "item_reference", "other"}


def _item_tag(value: Any) -> str | None:
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if not isinstance(kind, str | None):
        return None  # reported as an invalid type, not matched against the tags
    if kind is None:
        return "message" if "role" in value else "item_reference" if "id" in value else None
    if kind in OTHER_ITEM_TYPES:
        return "other"
    return kind if kind in ITEM_TAGS else None


InputItem = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")]
    | Annotated[Reasoning, Tag("reasoning")]
    | Annotated[ItemReference, Tag("item_reference")]
    | Annotated[OtherItem, Tag("other")],
    Discriminator(_item_tag, custom_error_type="invalid_item", custom_error_message="Invalid input item"),
]


# --- tools and configuration -------------------------------------------------------------------


class FunctionTool(Strict):
    type: Literal["function"]
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = True
    defer_loading: bool | None = None
    allowed_callers: list[Literal["direct", "programmatic"]] | None = None
    output_schema: dict[str, Any] | None = None
    async_: bool | None = Field(None, alias="async")


BUILTIN_TOOL_TYPES = frozenset(
    {
        "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11",
        "file_search", "code_interpreter", "image_generation", "mcp", "custom", "computer_use_preview",
        "computer", "local_shell", "shell", "apply_patch", "tool_search", "namespace", "programmatic_tool_calling",
    }
)


Callers = list[Literal["direct", "programmatic"]] | None


class McpToolFilter(Strict):
    read_only: bool | None = None
    tool_names: list[str] | None = None


class McpApprovalFilter(Strict):
    always: McpToolFilter | None = None
    never: McpToolFilter | None = None


class McpTool(Strict):
    type: Literal["mcp"]
    server_label: str
    allowed_callers: Callers = None
    allowed_tools: list[str] | McpToolFilter | None = None
    authorization: str | None = None
    connector_id: str | None = None
    defer_loading: bool | None = None
    headers: dict[str, str] | None = None
    require_approval: Literal["always", "never"] | McpApprovalFilter | None = None
    server_description: str | None = None
    server_url: str | None = None
    tunnel_id: str | None = None


class CustomFormatText(Strict):
    type: Literal["text"]


class CustomFormatGrammar(Strict):
    type: Literal["grammar"]
    definition: str
    syntax: Literal["lark", "regex"]


class CustomTool(Strict):
    type: Literal["custom"]
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    format: Annotated[CustomFormatText | CustomFormatGrammar, Field(discriminator="type")] | None = None
    allowed_callers: Callers = None
    defer_loading: bool | None = None
    async_: bool | None = Field(None, alias="async")


class ImageGenerationTool(Strict):
    type: Literal["image_generation"]
    action: Literal["generate", "edit", "auto"] | None = None
    background: Literal["transparent", "opaque", "auto"] | None = None
    complexity: Literal["low", "medium", "high"] | None = None
    frame_count: int | None = Field(None, ge=1)
    frame_duration_ms: int | None = Field(None, ge=1)
    input_fidelity: Literal["high", "low"] | None = None
    input_image_mask: dict[str, str] | None = None
    model: str | None = None
    moderation: Literal["auto", "low"] | None = None
    output_compression: int | None = Field(None, ge=0, le=100)
    output_format: Literal["png", "webp", "jpeg", "gif", "svg"] | None = None
    partial_images: int | None = Field(None, ge=0, le=3)
    quality: Literal["low", "medium", "high", "xhigh", "max", "auto"] | None = None
    size: str | None = None
    svg: dict[str, Any] | None = None


class FileSearchTool(Strict):
    type: Literal["file_search"]
    vector_store_ids: list[str]
    filters: dict[str, Any] | None = None
    max_num_results: int | None = Field(None, ge=1, le=50)
    ranking_options: dict[str, Any] | None = None


class WebSearchFilters(Strict):
    allowed_domains: list[str] | None = None


class UserLocation(Strict):
    type: Literal["approximate"] | None = None
    city: str | None = None
    country: str | None = None
    region: str | None = None
    timezone: str | None = None


class WebSearchTool(Strict):
    """web_search and web_search_preview, each dated variant."""

    type: Literal["web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11"]
    external_web_access: bool | None = None
    filters: WebSearchFilters | None = None
    search_context_size: Literal["low", "medium", "high"] | None = None
    search_content_types: list[Literal["text", "image"]] | None = None
    user_location: UserLocation | None = None


class ContainerAuto(Strict):
    type: Literal["auto"]
    file_ids: list[str] | None = None
    memory_limit: Literal["1g", "4g", "16g", "64g"] | None = None
    network_policy: dict[str, Any] | None = None


class CodeInterpreterTool(Strict):
    type: Literal["code_interpreter"]
    container: str | ContainerAuto
    allowed_callers: Callers = None


# Built-in tools whose configuration the simulator reads: validated field by field as the real API does.
CHECKED_TOOLS: dict[str, type[BaseModel]] = {
    "mcp": McpTool, "custom": CustomTool, "image_generation": ImageGenerationTool, "file_search": FileSearchTool,
    "code_interpreter": CodeInterpreterTool, **{kind: WebSearchTool for kind in (
        "web_search", "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11")},
}


class BuiltinTool(Open):
    """The other built-in tools (computer, shell, apply_patch, ...): carried through as sent."""

    type: str

    @field_validator("type")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in BUILTIN_TOOL_TYPES:
            raise ValueError(f"Invalid value: '{value}'. Supported values are: 'function', " + ", ".join(
                f"'{t}'" for t in sorted(BUILTIN_TOOL_TYPES)) + ".")
        return value


def _tool_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if kind == "function" or (isinstance(kind, str) and kind in CHECKED_TOOLS) else "builtin"


if TYPE_CHECKING:  # the same union, written out for the type checker (it cannot unpack CHECKED_TOOLS)
    Tool = (FunctionTool | McpTool | CustomTool | ImageGenerationTool | FileSearchTool | CodeInterpreterTool
            | WebSearchTool | BuiltinTool)
else:
    Tool = Annotated[
        Union[
            Annotated[FunctionTool, Tag("function")],
            *(Annotated[model, Tag(kind)] for kind, model in CHECKED_TOOLS.items()),
            Annotated[BuiltinTool, Tag("builtin")],
        ],
        Discriminator(_tool_tag),
    ]


class TextFormatText(Strict):
    type: Literal["text"]


class TextFormatJsonObject(Strict):
    type: Literal["json_object"]


class TextFormatJsonSchema(Strict):
    type: Literal["json_schema"]
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    schema_: dict[str, Any] = Field(alias="schema")
    description: str | None = None
    strict: bool | None = None

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)


TextFormat = Annotated[
    TextFormatText | TextFormatJsonObject | TextFormatJsonSchema, Field(discriminator="type")
]


class TextConfig(Strict):
    format: TextFormat = Field(default_factory=lambda: TextFormatText(type="text"))
    verbosity: Literal["low", "medium", "high"] = "medium"

    @field_validator("verbosity", mode="before")
    @classmethod
    def _null_is_default(cls, value: Any) -> Any:
        return "medium" if value is None else value  # the SDK's type is nullable: null means the default


class ReasoningConfig(Strict):
    effort: Effort | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None
    context: Literal["auto", "current_turn", "all_turns"] | None = None
    mode: str | None = None  # "standard", "pro", or a newer one


class StreamOptions(Strict):
    include_obfuscation: bool | None = None


class ConversationRef(Strict):
    id: str


class ToolChoiceFunction(Strict):
    type: Literal["function"]
    name: str


class ToolRef(Open):
    """A tool named in allowed_tools: its type and, for those that have them, its name or server label."""

    type: str
    name: str | None = None
    server_label: str | None = None


class ToolChoiceAllowed(Strict):
    type: Literal["allowed_tools"]
    mode: Literal["auto", "required"]
    tools: list[ToolRef]


class ToolChoiceOther(Open):
    """Hosted tool types, mcp, custom: carried through as sent."""

    type: str


def _choice_tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else None
    return kind if kind in ("function", "allowed_tools") else "other"


ToolChoice = Literal["none", "auto", "required"] | Annotated[
    Annotated[ToolChoiceFunction, Tag("function")] | Annotated[ToolChoiceAllowed, Tag("allowed_tools")]
    | Annotated[ToolChoiceOther, Tag("other")],
    Discriminator(_choice_tag),
]


def as_items(value: Any) -> Any:
    """A string input is one user message."""
    return [{"type": "message", "role": "user", "content": value}] if isinstance(value, str) else value


class _Request(Strict):
    conversation: str | ConversationRef | None = None

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, data: Any) -> Any:
        """`null` for an optional parameter means its default, as the SDK's nullable types allow."""
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        return {k: v for k, v in data.items() if v is not None or k not in fields or fields[k].is_required()}

    @property
    def conversation_id(self) -> str | None:
        return self.conversation.id if isinstance(self.conversation, ConversationRef) else self.conversation


class CreateRequest(_Request):
    model: str
    input: list[InputItem] = Field(default_factory=list)
    instructions: str | list[InputItem] | None = None
    max_output_tokens: int | None = Field(None, ge=16)
    max_tool_calls: int | None = Field(None, ge=1)
    temperature: float | None = Field(None, ge=0, le=2)
    top_p: float | None = Field(None, ge=0, le=1)
    top_logprobs: int | None = Field(None, ge=0, le=20)
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    text: TextConfig = Field(default_factory=TextConfig)
    reasoning: ReasoningConfig | None = None
    metadata: dict[str, str] | None = None
    store: bool = True
    stream: bool = False
    stream_options: StreamOptions | None = None
    previous_response_id: str | None = None
    include: list[Includable] = Field(default_factory=list)
    truncation: Literal["auto", "disabled"] = "disabled"
    user: str | None = None
    safety_identifier: str | None = None
    prompt_cache_key: str | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    prompt_cache_options: dict[str, Any] | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"] | None = None
    background: bool = False
    background_options: dict[str, Any] | None = None
    prompt: dict[str, Any] | None = None
    context_management: list[dict[str, Any]] | None = None
    image: dict[str, Any] | None = None
    moderation: dict[str, Any] | None = None
    access_programs: dict[str, Any] | None = None
    client_metadata: dict[str, str] | None = None  # Codex's session/thread/turn ids, on every request

    _string_input = field_validator("input", mode="before")(lambda value: as_items(value))

    @property
    def tool_choice_data(self) -> str | dict[str, Any]:
        choice = self.tool_choice
        return choice.model_dump(exclude_none=True) if isinstance(choice, BaseModel) else choice



class InputTokensRequest(_Request):
    """POST /responses/input_tokens: the parts of a create request that decide the prompt."""

    model: str | None = None
    input: list[InputItem] = Field(default_factory=list)
    instructions: str | None = None
    tools: list[Tool] = Field(default_factory=list)
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool | None = None
    previous_response_id: str | None = None
    reasoning: ReasoningConfig | None = None
    text: TextConfig = Field(default_factory=TextConfig)
    truncation: Literal["auto", "disabled"] | None = None
    personality: str | None = None
    client_metadata: dict[str, str] | None = None  # Codex's, as on a create request

    _string_input = field_validator("input", mode="before")(lambda value: as_items(value))


# --- pydantic errors → OpenAI errors -----------------------------------------------------------

_TAGS = ITEM_TAGS | {"builtin", "function", "other", "input_text", "input_image", "input_file", "output_text",
                     "refusal", "text", "json_object", "json_schema", "str", "ConversationRef",
                     # llmsim/chat/schema.py's branches: message roles and chat content parts
                     "system", "developer", "user", "assistant", "tool", "image_url", "input_audio", "file", "custom",
                     "allowed_tools", "grammar", "McpToolFilter", "McpApprovalFilter", "ContainerAuto", *CHECKED_TOOLS}
_UNION_FIELDS = {"tool_choice", "format", "conversation", "output", "instructions", "allowed_tools",
                 "require_approval", "container"}
_TYPE_NAMES = {
    "string_type": "a string", "int_type": "an integer", "float_type": "a decimal", "bool_type": "a boolean",
    "dict_type": "an object", "model_type": "an object", "list_type": "an array", "model_attributes_type": "an object",
    "is_instance_of": "an object",
}


def _param(loc: tuple[Any, ...]) -> str:
    """A pydantic location as the API names a parameter: `input[0].content[1].text`, union branches left out."""
    out = ""
    previous: Any = None
    for part in loc:
        branch = isinstance(part, str) and "[" in part  # e.g. "tagged-union[...]", "list[...]"
        tag = part in _TAGS and (isinstance(previous, int) or previous in _UNION_FIELDS
                                 or (isinstance(previous, str) and "[" in previous))
        if isinstance(part, int):
            out += f"[{part}]"
        elif not branch and not tag:
            name = "schema" if part == "schema_" else str(part)
            out += f".{name}" if out else name
        previous = part
    return out


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a decimal"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null" if value is None else type(value).__name__


def _error(err: ErrorDetails) -> APIError:
    kind, value, param = err["type"], err.get("input"), _param(err["loc"])
    ctx = err.get("ctx") or {}
    if kind == "missing":
        return APIError(f"Missing required parameter: '{param}'.", param=param, code="missing_required_parameter")
    if kind == "extra_forbidden":
        return APIError(f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter")
    if kind in _TYPE_NAMES:
        return APIError(
            f"Invalid type for '{param}': expected {_TYPE_NAMES[kind]}, but got {_describe(value)} instead.",
            param=param, code="invalid_type",
        )
    if kind in ("literal_error", "union_tag_invalid", "enum"):
        expected = ctx.get("expected", ctx.get("expected_tags", ""))
        if kind == "union_tag_invalid":
            discriminator = str(ctx.get("discriminator", "type")).strip("'")  # `type`, or `role` for chat messages
            param = f"{param}.{discriminator}"
            value = value.get(discriminator) if isinstance(value, dict) else value
        if not isinstance(value, str):  # never a Python repr in a message: name the type instead
            return APIError(f"Invalid type for '{param}': expected one of {expected}, but got {_describe(value)} "
                            "instead.", param=param, code="invalid_type")
        return APIError(f"Invalid value: '{value}'. Supported values are: {expected}.", param=param,
                        code="invalid_value")
    if kind == "invalid_item":
        tag = value.get("type") if isinstance(value, dict) else None
        if tag is not None and not isinstance(tag, str):
            return APIError(f"Invalid type for '{param}.type': expected a string, but got {_describe(tag)} instead.",
                            param=f"{param}.type", code="invalid_type")
        if tag is None:
            return APIError(f"Invalid type for '{param}': expected an input item, but got {_describe(value)} instead.",
                            param=param, code="invalid_type")
        return APIError(f"Invalid value: '{tag}'. Supported values are: 'message', 'function_call', "
                        "'function_call_output', 'reasoning', 'item_reference' and the built-in tool item types.",
                        param=f"{param}.type", code="invalid_value")
    bounds = {
        "greater_than_equal": ("below minimum value", "a value >=", "ge"),
        "less_than_equal": ("above maximum value", "a value <=", "le"),
        "greater_than": ("below minimum value", "a value >", "gt"),
        "less_than": ("above maximum value", "a value <", "lt"),
    }
    if kind in bounds:
        what, expectation, key = bounds[kind]
        number = "decimal" if isinstance(ctx.get(key), float) else "integer"
        code = f"{number}_{'below_min' if 'below' in what else 'above_max'}_value"
        return APIError(
            f"Invalid '{param}': {number} {what}. Expected {expectation} {ctx.get(key)}, but got {value} instead.",
            param=param, code=code,
        )
    if kind == "string_pattern_mismatch":
        return APIError(
            f"Invalid '{param}': string does not match pattern. Expected a string that matches the pattern "
            f"'{ctx.get('pattern')}'.", param=param, code="invalid_value",
        )
    if kind == "value_error":
        message = str(ctx.get("error", err["msg"]))
        return APIError(message, param=param, code="invalid_value")
    return APIError(f"Invalid '{param}': {err['msg']}.", param=param, code="invalid_value")


M = TypeVar("M", bound=BaseModel)
_LOST = frozenset({"missing", "invalid_item", "union_tag_invalid", "union_tag_not_found"})  # a field gone missing


# Top-level names refused on /responses, with what the client meant (llmsim/shared/compat.py).
REFUSED: dict[str, str] = {
    "messages": "Chat Completions' name: use 'input'",
    "max_tokens": "Chat Completions' name: use 'max_output_tokens'",
    "max_completion_tokens": "Chat Completions' name: use 'max_output_tokens'",
    "response_format": "Chat Completions' name: use 'text.format'",
    "reasoning_effort": "Chat Completions' name: use 'reasoning.effort'",
    "functions": "Chat Completions' deprecated name: use 'tools'",
    "function_call": "Chat Completions' deprecated name: use 'tool_choice'",
    "n": "Chat Completions only: the Responses API makes one output",
    "stop": "Chat Completions only",
    "logit_bias": "Chat Completions only",
    "frequency_penalty": "Chat Completions only",
    "presence_penalty": "Chat Completions only",
    "seed": "not a Responses API parameter",
}


def parse(model: type[M], body: Any, lenient: list[str] | None = None, refused: Mapping[str, str] = REFUSED) -> M:
    """`body` as `model`, or the live API's 400. `lenient`: where to report what is forgiven (see
    llmsim/shared/compat.py: unknown names and enum values are dropped, except the names `refused`); None:
    strict."""
    if not isinstance(body, dict):
        raise APIError(
            f"Invalid type for request body: expected an object, but got {_describe(body)} instead.",
            code="invalid_type",
        )
    forgiven: dict[tuple[Any, ...], ErrorDetails] = {}  # an enum value dropped, by where it was
    copied = False
    for _ in range(compat.MAX_FORGIVEN):
        try:
            return model.model_validate(body)
        except ValidationError as exc:
            errors = exc.errors()
            lost = next((was for e in errors if e["type"] in _LOST for at, was in forgiven.items()
                         if at[:len(e["loc"])] == e["loc"]), None)
            if lost is not None:  # a required field's unknown value (a role): its own error, not its absence's
                raise _error(lost) from None
            if lenient is None:
                _raise(errors)
            if not copied:
                body, copied = copy.deepcopy(body), True  # the request as sent stays as sent (the transcript)
            # Every unknown name at once (dropping a key moves no other), else the first unknown value (dropping a
            # list's entry moves the next ones); whatever else is wrong is found again on the next round.
            found = [w for e in errors if e["type"] == "extra_forbidden" and (w := compat.forgive(body, e, refused))]
            for error in [] if found else errors:
                warning = compat.forgive(body, error, refused)
                if warning is not None:
                    found, forgiven[error["loc"]] = [warning], error
                    break
            if not found:
                _raise(errors)
            lenient.extend(w for w in dict.fromkeys(found) if w not in lenient)
            del lenient[compat.MAX_WARNINGS:]
    try:  # past MAX_FORGIVEN rounds the body is refused as it now stands
        return model.model_validate(body)
    except ValidationError as exc:
        _raise(exc.errors())


def _raise(errors: list[ErrorDetails]) -> NoReturn:
    # A union reports one error per branch: skip branches of another type, then the deepest error
    # names what the client got wrong.
    same_field = [e for e in errors if e["loc"][:1] == errors[0]["loc"][:1]]
    # An object sent where a string enum is one branch: the object's own errors say more.
    same_field = [e for e in same_field if e["type"] != "literal_error" or isinstance(e.get("input"), str)] \
        or same_field
    relevant = [e for e in same_field if e["type"] not in _TYPE_NAMES] or same_field
    raise _error(max(relevant, key=lambda e: len(e["loc"]))) from None


METADATA_MAX_KEYS, METADATA_MAX_KEY, METADATA_MAX_VALUE = 16, 64, 512


def check_metadata(metadata: dict[str, str] | None) -> None:
    if not metadata:
        return
    if len(metadata) > METADATA_MAX_KEYS:
        raise APIError(
            f"Invalid 'metadata': too many properties. Expected an object with at most {METADATA_MAX_KEYS} "
            f"properties, but got an object with {len(metadata)} properties instead.",
            param="metadata", code="object_above_max_properties",
        )
    for key, value in metadata.items():
        if len(key) > METADATA_MAX_KEY:
            raise APIError(
                f"Invalid 'metadata': string too long. Expected a string with maximum length {METADATA_MAX_KEY}, "
                f"but got a string with length {len(key)} instead.", param="metadata", code="string_above_max_length",
            )
        if len(value) > METADATA_MAX_VALUE:
            raise APIError(
                f"Invalid 'metadata.{key}': string too long. Expected a string with maximum length "
                f"{METADATA_MAX_VALUE}, but got a string with length {len(value)} instead.",
                param=f"metadata.{key}", code="string_above_max_length",
            )
