"""Request shapes for POST /chat/completions, as the official SDK's `CompletionCreateParams` names them.

Strict and closed like llmsim/responses/schema.py, so errors read as the real API's
(`Unknown parameter: 'messages[0].contnet'.`); schema.parse maps them.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, field_validator

from llmsim.responses.schema import Effort
from llmsim.responses.schema import Strict as _Strict


class Strict(_Strict):
    """The Responses models' strictness, each model's validator built at the first chat request that uses it
    (pydantic's defer_build): a server that serves no chat request never spends the ~30 ms."""

    model_config = ConfigDict(defer_build=True)

# --- content parts -----------------------------------------------------------------------------


class TextPart(Strict):
    type: Literal["text"]
    text: str
    prompt_cache_breakpoint: dict[str, Any] | None = None


class ImageURL(Strict):
    url: str
    detail: Literal["auto", "low", "high", "original"] = "auto"


class ImagePart(Strict):
    type: Literal["image_url"]
    image_url: ImageURL
    prompt_cache_breakpoint: dict[str, Any] | None = None


class InputAudio(Strict):
    data: str
    format: Literal["wav", "mp3"]


class AudioPart(Strict):
    type: Literal["input_audio"]
    input_audio: InputAudio
    prompt_cache_breakpoint: dict[str, Any] | None = None


class FileData(Strict):
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class FilePart(Strict):
    type: Literal["file"]
    file: FileData
    prompt_cache_breakpoint: dict[str, Any] | None = None


class RefusalPart(Strict):
    type: Literal["refusal"]
    refusal: str


UserPart = Annotated[TextPart | ImagePart | AudioPart | FilePart, Field(discriminator="type")]
AssistantPart = Annotated[TextPart | RefusalPart, Field(discriminator="type")]


# --- messages ----------------------------------------------------------------------------------


class SystemMessage(Strict):
    role: Literal["system", "developer"]
    content: str | list[TextPart]
    name: str | None = None


class UserMessage(Strict):
    role: Literal["user"]
    content: str | list[UserPart]
    name: str | None = None


class FunctionCallData(Strict):
    name: str
    arguments: str


class CustomCallData(Strict):
    name: str
    input: str


class FunctionToolCall(Strict):
    type: Literal["function"]
    id: str
    function: FunctionCallData


class CustomToolCall(Strict):
    type: Literal["custom"]
    id: str
    custom: CustomCallData


ToolCall = Annotated[FunctionToolCall | CustomToolCall, Field(discriminator="type")]


class AssistantMessage(Strict):
    """Other keys are ignored, as the real API ignores them: clients send back what their providers added
    (litellm's `provider_specific_fields`, `reasoning_content`, `thinking_blocks`). Parts and tool calls stay strict."""

    model_config = ConfigDict(strict=True, extra="ignore")
    role: Literal["assistant"]
    content: str | list[AssistantPart] | None = None
    refusal: str | None = None
    name: str | None = None
    tool_calls: list[ToolCall] | None = None
    function_call: FunctionCallData | None = None
    audio: dict[str, Any] | None = None
    annotations: list[dict[str, Any]] | None = None  # a returned message sent back as it came


class ToolMessage(Strict):
    role: Literal["tool"]
    content: str | list[TextPart]
    tool_call_id: str
    name: str | None = None  # the function's name: LangChain JS and OpenAI's cookbook send it


class FunctionMessage(Strict):
    role: Literal["function"]
    content: str | None
    name: str


Message = Annotated[
    SystemMessage | UserMessage | AssistantMessage | ToolMessage | FunctionMessage, Field(discriminator="role")
]


# --- tools, formats, options -------------------------------------------------------------------


class FunctionDefinition(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class FunctionTool(Strict):
    type: Literal["function"]
    function: FunctionDefinition


class CustomDefinition(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    format: dict[str, Any] | None = None


class CustomTool(Strict):
    type: Literal["custom"]
    custom: CustomDefinition


Tool = Annotated[FunctionTool | CustomTool, Field(discriminator="type")]


class Named(Strict):
    name: str


class NamedFunctionChoice(Strict):
    type: Literal["function"]
    function: Named


class NamedCustomChoice(Strict):
    type: Literal["custom"]
    custom: Named


class AllowedTools(Strict):
    mode: Literal["auto", "required"]
    tools: list[dict[str, Any]]


class AllowedToolsChoice(Strict):
    type: Literal["allowed_tools"]
    allowed_tools: AllowedTools


ToolChoice = (Literal["none", "auto", "required"]
              | Annotated[NamedFunctionChoice | NamedCustomChoice | AllowedToolsChoice, Field(discriminator="type")])


class FormatText(Strict):
    type: Literal["text"]


class FormatJsonObject(Strict):
    type: Literal["json_object"]


class JsonSchema(Strict):
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str | None = None
    schema_: dict[str, Any] | None = Field(None, alias="schema")
    strict: bool | None = None


class FormatJsonSchema(Strict):
    type: Literal["json_schema"]
    json_schema: JsonSchema


ResponseFormat = Annotated[FormatText | FormatJsonObject | FormatJsonSchema, Field(discriminator="type")]


class StreamOptions(Strict):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None


# --- the request -------------------------------------------------------------------------------


class ChatRequest(Strict):
    messages: list[Message] = Field(min_length=1)
    model: str
    audio: dict[str, Any] | None = None
    frequency_penalty: float | None = Field(None, ge=-2, le=2)
    function_call: Literal["none", "auto"] | Named | None = None
    functions: list[FunctionDefinition] | None = None
    logit_bias: dict[str, int] | None = None
    logprobs: bool | None = None
    max_completion_tokens: int | None = Field(None, ge=1)
    max_tokens: int | None = Field(None, ge=1)
    metadata: dict[str, str] | None = None
    modalities: list[Literal["text", "audio"]] | None = None
    moderation: dict[str, Any] | None = None
    n: int | None = Field(None, ge=1, le=128)
    parallel_tool_calls: bool | None = None
    prediction: dict[str, Any] | None = None
    presence_penalty: float | None = Field(None, ge=-2, le=2)
    prompt_cache_key: str | None = None
    prompt_cache_options: dict[str, Any] | None = None
    prompt_cache_retention: Literal["in_memory", "24h"] | None = None
    reasoning_effort: Effort | None = None
    response_format: ResponseFormat | None = None
    safety_identifier: str | None = None
    seed: int | None = None
    service_tier: Literal["auto", "default", "flex", "scale", "priority", "fast", "ultrafast"] | None = None
    stop: str | list[str] | None = None
    store: bool | None = None
    stream: bool | None = None
    stream_options: StreamOptions | None = None
    temperature: float | None = Field(None, ge=0, le=2)
    tool_choice: ToolChoice | None = None
    tools: list[Tool] | None = None
    top_logprobs: int | None = Field(None, ge=0, le=20)
    top_p: float | None = Field(None, ge=0, le=1)
    user: str | None = None
    verbosity: Literal["low", "medium", "high"] | None = None
    web_search_options: dict[str, Any] | None = None

    @field_validator("stop")
    @classmethod
    def _at_most_four(cls, value: str | list[str] | None) -> str | list[str] | None:
        if isinstance(value, list) and len(value) > 4:
            raise ValueError(f"Invalid 'stop': array too long. Expected an array with maximum length 4, but got an "
                             f"array with length {len(value)} instead.")
        return value

    @property
    def stops(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else [s for s in self.stop or [] if s]


# Top-level names refused on /chat/completions, with what the client meant (llmsim/shared/compat.py).
REFUSED: dict[str, str] = {
    "input": "the Responses API's name: use 'messages'",
    "instructions": "the Responses API's name: use a system or developer message",
    "max_output_tokens": "the Responses API's name: use 'max_completion_tokens'",
    "text": "the Responses API's name: use 'response_format' and 'verbosity'",
    "reasoning": "the Responses API's name: use 'reasoning_effort'",
    "previous_response_id": "the Responses API only",
    "conversation": "the Responses API only",
    "include": "the Responses API only",
    "truncation": "the Responses API only",
    "background": "the Responses API only",
}
