"""Request shapes for POST /v1/messages and /v1/messages/count_tokens, as the anthropic SDK's
`MessageCreateParams` names them.

Open where the API grows fastest (top-level fields and blocks accept what a newer client or a beta sends, so
Claude Code's betas pass), closed where a mistake changes the meaning (roles, block types, thinking, tool_choice).
Errors read as Anthropic's: `messages.0.role: Input should be 'user' or 'assistant'`.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from llmsim.errors import APIError


class Open(BaseModel):
    model_config = ConfigDict(extra="allow", defer_build=True)  # built at the first request that uses it


class CacheControl(Open):
    type: Literal["ephemeral"] = "ephemeral"
    ttl: Literal["5m", "1h"] | None = None


class Block(Open):
    cache_control: CacheControl | None = None


class TextBlock(Block):
    type: Literal["text"]
    text: str


class ImageBlock(Block):
    type: Literal["image"]
    source: dict[str, Any]


class DocumentBlock(Block):
    type: Literal["document"]
    source: dict[str, Any]
    title: str | None = None


class ToolUseBlock(Block):
    type: Literal["tool_use", "server_tool_use"]
    id: str
    name: str
    input: Any = None


class ToolResultBlock(Block):
    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]] | None = None
    is_error: bool | None = None


class ThinkingBlock(Block):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(Block):
    type: Literal["redacted_thinking"]
    data: str


class OtherBlock(Block):
    """A block this simulator does not read (search results, server tool results, containers): counted, kept."""

    type: Literal["search_result", "web_search_tool_result", "web_fetch_tool_result",
                  "code_execution_tool_result", "bash_code_execution_tool_result",
                  "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload",
                  "mcp_tool_use", "mcp_tool_result"]


ContentBlock = Annotated[TextBlock | ImageBlock | DocumentBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock |
                         RedactedThinkingBlock | OtherBlock, Field(discriminator="type")]


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    role: Literal["user", "assistant"]
    content: str | list[ContentBlock]


class Tool(Open):
    """A client tool (`input_schema`), or a typed one (`bash_20250124`, `web_search_20250305`, ...)."""

    name: str = Field(min_length=1, max_length=128)
    type: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None
    cache_control: CacheControl | None = None


class ToolChoice(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)
    type: Literal["auto", "any", "tool", "none"]
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class ThinkingEnabled(Open):
    type: Literal["enabled"]
    budget_tokens: int = Field(ge=1024)
    display: Literal["summarized", "omitted"] | None = None


class ThinkingOther(Open):
    type: Literal["adaptive", "disabled", "between_tools"]
    display: Literal["summarized", "omitted"] | None = None


Thinking = Annotated[ThinkingEnabled | ThinkingOther, Field(discriminator="type")]


class Metadata(Open):
    user_id: str | None = Field(None, max_length=256)


class CountTokensRequest(Open):
    model: str = Field(min_length=1)
    messages: list[Message] = Field(min_length=1)
    system: str | list[TextBlock] | None = None
    tools: list[Tool] | None = None
    tool_choice: ToolChoice | None = None
    thinking: Thinking | None = None


class CreateRequest(CountTokensRequest):
    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    stream: bool = False
    temperature: float | None = Field(None, ge=0, le=1)
    top_p: float | None = Field(None, ge=0, le=1)
    top_k: int | None = Field(None, ge=0)
    metadata: Metadata | None = None


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], body: Any) -> M:
    """The typed request, or Anthropic's 400 naming the first field at fault (`messages.0.content: ...`)."""
    if not isinstance(body, dict):
        raise APIError("Input should be a valid dictionary", param=None)
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        error = max(exc.errors(), key=lambda e: (e["type"] != "union_tag_invalid", -len(e["loc"])))
        where = ".".join(str(part) for part in error["loc"] if not _branch(part))
        raise APIError(f"{where}: {error['msg']}" if where else error["msg"], param=where or None) from None


def _branch(part: Any) -> bool:
    """A union branch's name pydantic puts in an error's location (`str`, `list[...]`, a tag): not a field."""
    return isinstance(part, str) and (part in ("str", "int") or "[" in part or part.startswith("function-"))
