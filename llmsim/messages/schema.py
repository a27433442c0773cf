"""Request shapes for POST /v1/messages and /v1/messages/count_tokens, as the anthropic SDK's `MessageCreateParams`
(stable and beta) declares them.

Closed (every declared field named, `extra="forbid"`), so the forward-compatibility policy applies as on /responses
(llmsim/shared/compat.py): an unknown name or enum value is dropped and reported by default, and is the live
API's 400 ("Extra inputs are not permitted") under --strict-params. What this simulator only carries (citations,
sources, server tools' results, configs) is typed loosely below its declared names. Errors read as Anthropic's:
`messages.0.role: Input should be 'user', 'assistant' or 'system'`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NoReturn, TypeVar

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag
from pydantic_core import ErrorDetails

from llmsim.errors import APIError
from llmsim.responses import schema as responses_schema


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, populate_by_name=True)


class CacheControl(Closed):
    type: Literal["ephemeral"]
    ttl: Literal["5m", "1h"] | None = None


class Block(Closed):
    cache_control: CacheControl | None = None


class TextBlock(Block):
    type: Literal["text"]
    text: str
    citations: list[dict[str, Any]] | None = None


class ImageBlock(Block):
    type: Literal["image"]
    source: dict[str, Any]
    transformations: Any = None


class DocumentBlock(Block):
    type: Literal["document"]
    source: dict[str, Any]
    title: str | None = None
    context: str | None = None
    citations: dict[str, Any] | None = None


class SearchResultBlock(Block):
    type: Literal["search_result"]
    source: str
    title: str
    content: list[dict[str, Any]]
    citations: dict[str, Any] | None = None


class ToolUseBlock(Block):
    type: Literal["tool_use", "server_tool_use"]
    id: str
    name: str
    input: Any = None
    caller: dict[str, Any] | None = None
    toolset_name: str | None = None


class ToolResultBlock(Block):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None
    toolset_name: str | None = None


class ThinkingBlock(Closed):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(Closed):
    type: Literal["redacted_thinking"]
    data: str


class ServerResultBlock(Block):
    """A server tool's result sent back (search, fetch, code execution, advisor, MCP): kept, not read."""

    type: Literal["web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
                  "bash_code_execution_tool_result", "text_editor_code_execution_tool_result",
                  "tool_search_tool_result", "advisor_tool_result", "mcp_tool_result"]
    tool_use_id: str
    content: Any = None
    caller: dict[str, Any] | None = None
    is_error: bool | None = None


class McpToolUseBlock(Block):
    type: Literal["mcp_tool_use"]
    id: str
    name: str
    server_name: str
    input: Any = None


class ContainerUploadBlock(Block):
    type: Literal["container_upload"]
    file_id: str


class CompactionBlock(Block):
    """A compaction block sent back first in `messages`: it stands for the messages it summarized."""

    type: Literal["compaction"]
    content: str | None = None
    encrypted_content: str | None = None
    signature: str | None = None
    tool_changes: list[dict[str, Any]] | None = None


class ToolChangeBlock(Block):
    type: Literal["tool_addition", "tool_removal"]
    tool: dict[str, Any]


class McpToolListingBlock(Closed):
    type: Literal["mcp_tool_listing"]
    mcp_server_name: str
    tools: list[dict[str, Any]]


class FallbackBlock(Closed):
    type: Literal["fallback"]
    to: dict[str, Any]
    from_: dict[str, Any] | None = Field(None, alias="from")
    trigger: Any = None


ContentBlock = Annotated[TextBlock | ImageBlock | DocumentBlock | SearchResultBlock | ToolUseBlock |
                         ToolResultBlock | ThinkingBlock | RedactedThinkingBlock | ServerResultBlock |
                         McpToolUseBlock | ContainerUploadBlock | CompactionBlock | ToolChangeBlock |
                         McpToolListingBlock | FallbackBlock, Field(discriminator="type")]
SystemBlock = Annotated[TextBlock | ToolChangeBlock, Field(discriminator="type")]


class MessageOutputConfig(Closed):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None


class Message(Closed):
    """A turn. `system`: instructions placed where they stand in the conversation (Claude Code sends them
    mid-conversation); `clear_at: next_user_message` shows one only until a later user turn."""

    role: Literal["user", "assistant", "system"]
    content: str | list[ContentBlock] = ""
    clear_at: Literal["next_user_message", "never"] | None = None
    output_config: MessageOutputConfig | None = None


def _tool_kind(tool: Any) -> str:
    kind = tool.get("type") if isinstance(tool, dict) else getattr(tool, "type", None)
    if kind in (None, "custom"):
        return "custom"
    return "toolset" if isinstance(kind, str) and (kind == "mcp_toolset" or "_toolset_" in kind) else "typed"


class CustomTool(Closed):
    """A client tool, by its `input_schema`."""

    type: Literal["custom"] | None = None
    name: str = Field(min_length=1, max_length=128)
    description: str | None = None
    input_schema: dict[str, Any]
    cache_control: CacheControl | None = None
    allowed_callers: list[str] | None = None
    defer_loading: bool | None = None
    eager_input_streaming: bool | None = None
    input_examples: list[dict[str, Any]] | None = None
    strict: bool | None = None


class TypedTool(Closed):
    """A tool Anthropic defines by type (`bash_20250124`, `web_search_20260318`, `computer_20251124`, ...)."""

    type: str
    name: str = Field(min_length=1, max_length=128)
    cache_control: CacheControl | None = None
    allowed_callers: list[str] | None = None
    defer_loading: bool | None = None
    input_examples: list[dict[str, Any]] | None = None
    strict: bool | None = None
    max_characters: int | None = None
    allowed_domains: list[str] | None = None
    blocked_domains: list[str] | None = None
    max_uses: int | None = None
    user_location: dict[str, Any] | None = None
    citations: dict[str, Any] | None = None
    max_content_tokens: int | None = None
    url_sources: Any = None
    use_cache: bool | None = None
    response_inclusion: Any = None
    display_width_px: int | None = None
    display_height_px: int | None = None
    display_number: int | None = None
    enable_zoom: bool | None = None
    caching: Any = None
    max_tokens: int | None = None
    model: str | None = None


class Toolset(Closed):
    """A family of tools in one entry, with no `name` (`computer_toolset_20260801`, `browser_toolset_20260801`,
    `mcp_toolset`): its members are offered by their own names."""

    type: str
    cache_control: CacheControl | None = None
    configs: dict[str, Any] | None = None
    mcp_server_name: str | None = None
    default_config: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


Tool = Annotated[Annotated[CustomTool, Tag("custom")] | Annotated[TypedTool, Tag("typed")] |
                 Annotated[Toolset, Tag("toolset")], Discriminator(_tool_kind)]


class ToolChoice(Closed):
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingEnabled(Closed):
    type: Literal["enabled"]
    budget_tokens: int = Field(ge=1024)
    display: Literal["summarized", "omitted", "updates"] | None = None
    block_binding: dict[str, Any] | None = None


class ThinkingOther(Closed):
    type: Literal["adaptive", "disabled", "between_tools"]
    display: Literal["summarized", "omitted", "updates"] | None = None
    block_binding: dict[str, Any] | None = None


Thinking = Annotated[ThinkingEnabled | ThinkingOther, Field(discriminator="type")]


class OutputFormat(Closed):
    type: Literal["json_schema"]
    schema_: dict[str, Any] = Field(alias="schema")


class OutputConfig(Closed):
    effort: Literal["low", "medium", "high", "xhigh", "max"] | None = None
    format: OutputFormat | None = None
    task_budget: dict[str, Any] | None = None


class Metadata(Closed):
    user_id: str | None = Field(None, max_length=256)


class CountTokensRequest(Closed):
    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    system: str | list[SystemBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None
    cache_control: CacheControl | None = None
    output_config: OutputConfig | None = None
    output_format: OutputFormat | None = None  # the beta's name, before `output_config.format`
    context_management: dict[str, Any] | None = None
    mcp_servers: list[dict[str, Any]] | None = None
    compaction: dict[str, Any] | None = None
    container: dict[str, Any] | str | None = None
    speed: Literal["fast", "standard"] | None = None
    # the beta's and the platform's (accepted, with no effect on a simulated answer)
    billing_policy: dict[str, Any] | None = None
    diagnostics: dict[str, Any] | None = None
    fallback_credit_token: str | dict[str, Any] | None = None
    fallbacks: list[dict[str, Any]] | Literal["default"] | None = None
    inference_geo: str | None = None
    thread: dict[str, Any] | None = None
    user_profile_id: str | None = None
    workspace_id: str | None = None

    @property
    def format_schema(self) -> dict[str, Any] | None:
        """The structured output's JSON Schema: `output_config.format`, else the beta's `output_format`."""
        fmt = self.output_config.format if self.output_config and self.output_config.format else self.output_format
        return fmt.schema_ if fmt is not None else None


class CreateRequest(CountTokensRequest):
    max_tokens: int = Field(ge=0)  # 0: populate the prompt cache, generate nothing
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    metadata: Metadata | None = None
    service_tier: Literal["auto", "standard_only"] | None = None


M = TypeVar("M", bound=BaseModel)
# What one request may hold, checked on the decoded body before any validation (the body itself is bounded by
# --max-body-bytes, 32 MB as Anthropic's): far past a real conversation, and cheap to refuse.
MAX_MESSAGES = 10_000
MAX_BLOCKS = 20_000  # content blocks across the request's messages and system
MAX_STOP_SEQUENCES = 1_000
MAX_STOP_CHARS = 1_000
_TYPE_ERRORS = frozenset({"string_type", "list_type", "dict_type", "model_type", "model_attributes_type",
                          "int_type", "bool_type", "float_type", "is_instance_of", "literal_error",
                          "union_tag_not_found"})


REFUSED: dict[str, str] = {  # another API's names, refused in every mode (llmsim/shared/compat.py)
    "input": "the Responses API's name: use 'messages'",
    "instructions": "the Responses API's name: use 'system'",
    "max_output_tokens": "the Responses API's name: use 'max_tokens'",
    "max_completion_tokens": "Chat Completions' name: use 'max_tokens'",
    "response_format": "Chat Completions' name: use 'output_config.format'",
    "stop": "Chat Completions' name: use 'stop_sequences'",
    "reasoning_effort": "Chat Completions' name: use 'thinking' or 'output_config.effort'",
    "n": "Chat Completions only: the Messages API makes one message",
}


def parse(model: type[M], body: Any, lenient: list[str] | None = None) -> M:
    """The typed request, or Anthropic's 400 naming the first field at fault (`messages.0.content.0: ...`).
    `lenient`: where unknown names and values are reported as they are dropped; None: strict."""
    if not isinstance(body, dict):
        raise APIError("Input should be a valid dictionary", param=None)
    _bounded(body)
    return responses_schema.parse(model, body, lenient, REFUSED, fail=_raise)


def _bounded(body: dict[str, Any]) -> None:
    """A 400 for a request past what one request may hold, before the work its size would cost."""
    messages = body.get("messages")
    if isinstance(messages, list):
        if len(messages) > MAX_MESSAGES:
            raise APIError(f"messages: too many messages ({len(messages)}); at most {MAX_MESSAGES} are accepted",
                           param="messages")
        system = body.get("system")
        blocks = len(system) if isinstance(system, list) else 0
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            blocks += len(content) if isinstance(content, list) else 0
        if blocks > MAX_BLOCKS:
            raise APIError(f"messages: too many content blocks ({blocks}); at most {MAX_BLOCKS} are accepted "
                           "across a request", param="messages")
    stops = body.get("stop_sequences")
    if isinstance(stops, list):
        if len(stops) > MAX_STOP_SEQUENCES:
            raise APIError(f"stop_sequences: too many stop sequences ({len(stops)}); at most "
                           f"{MAX_STOP_SEQUENCES} are accepted", param="stop_sequences")
        if any(isinstance(stop, str) and len(stop) > MAX_STOP_CHARS for stop in stops):
            raise APIError(f"stop_sequences: a stop sequence is longer than {MAX_STOP_CHARS} characters",
                           param="stop_sequences")


def _raise(errors: list[ErrorDetails]) -> NoReturn:
    """The error that says what the client got wrong: not a branch's type mismatch when another branch (the one
    of the value's type) says more, and a block's unknown tag over its missing fields."""
    first = errors[0]["loc"][:1]
    same = [e for e in errors if e["loc"][:1] == first]
    tagged = [e for e in same if e["type"] == "union_tag_invalid"]
    telling = tagged or [e for e in same if e["type"] not in _TYPE_ERRORS] or same
    error = max(telling, key=lambda e: len(e["loc"]))
    where = _where(error["loc"])
    raise APIError(f"{where}: {error['msg']}" if where else error["msg"], param=where or None) from None


def _where(loc: tuple[Any, ...]) -> str:
    """`messages.0.content.0.text`: the fields and indexes of pydantic's location, without the union branches it
    puts in (`str`, `list[...]`, a block's or tool's tag after its index, thinking's type after `thinking`)."""
    parts: list[str] = []
    for i, part in enumerate(loc):
        before = loc[i - 1] if i else None
        if isinstance(part, str) and (part in ("str", "int") or "[" in part or part.startswith("function-") or
                                      (isinstance(before, int) or before in ("thinking", "system")) and
                                      part in _TAGS):
            continue
        parts.append(str(part))
    return ".".join(parts)


_TAGS = frozenset({"text", "image", "document", "search_result", "tool_use", "server_tool_use", "tool_result",
                   "thinking", "redacted_thinking", "web_search_tool_result", "web_fetch_tool_result",
                   "code_execution_tool_result", "bash_code_execution_tool_result",
                   "text_editor_code_execution_tool_result", "tool_search_tool_result", "advisor_tool_result",
                   "mcp_tool_result", "mcp_tool_use", "container_upload", "compaction", "tool_addition",
                   "tool_removal", "mcp_tool_listing", "fallback", "custom", "typed", "toolset", "enabled",
                   "adaptive", "disabled", "between_tools"})
