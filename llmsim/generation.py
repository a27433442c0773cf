"""The contract between the translator, the backends and the event builder."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from llmsim.timing.profiles import Profile

Role = Literal["system", "user", "assistant", "tool"]


# The tool types that are OpenAI's hosted web search, by any of its names (the backends answer them alike).
WEB_SEARCH_TYPES = frozenset({"web_search", "web_search_preview", "web_search_2025_08_26",
                              "web_search_preview_2025_03_11"})


@dataclass(frozen=True)
class Turn:
    """One item of the conversation as a backend sees it (roles already normalised)."""

    role: Role
    text: str = ""
    kind: str = "message"  # message | function_call | function_call_output | reasoning | other
    name: str | None = None
    call_id: str | None = None


@dataclass(frozen=True)
class Prompt:
    """Everything a backend needs to generate one response; built by the translator."""

    model: str
    profile: Profile
    turns: list[Turn]
    input_tokens: int
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: str | dict[str, Any] = "auto"
    parallel_tool_calls: bool = True
    max_tool_calls: int | None = None
    text_format: dict[str, Any] = field(default_factory=lambda: {"type": "text"})
    verbosity: str = "medium"
    temperature: float = 1.0
    top_p: float = 1.0
    top_logprobs: int = 0
    logprobs: bool = False
    presence_penalty: float = 0.0  # Chat Completions only; the Responses API has no such field
    frequency_penalty: float = 0.0
    max_output_tokens: int | None = None
    cached_input_tokens: int = 0  # of input_tokens, those a prompt cache reads (Anthropic's ITPM does not count them)
    reasoning_effort: str | None = None
    reasoning_summary: str | None = None
    seed: int | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    include: tuple[str, ...] = ()
    script: Script | None = None  # a scenario's scripted reply: the backend says/calls exactly this
    text_mode: str | None = None  # sim: prose | echo | lorem | faker for this request (None: the server's)


@dataclass(frozen=True)
class ScriptedCall:
    name: str
    arguments: str  # JSON text for a function tool, free text for a custom tool


@dataclass(frozen=True)
class Script:
    """What a scenario rule dictates for one response; unset parts are simulated as usual."""

    text: str | None = None
    tool_calls: tuple[ScriptedCall, ...] = ()
    reasoning_summary: str | None = None


@dataclass(frozen=True)
class ReasoningDelta:
    """Hidden reasoning (`tokens` counted, no text), visible reasoning `text`, or `summary` text."""

    tokens: int = 0
    text: str = ""
    summary: str = ""


@dataclass(frozen=True)
class TextDelta:
    text: str
    tokens: int = 1
    logprobs: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class TextRun:
    """Consecutive text deltas made at once (text without logprobs, its chunks known up front): one delta
    through the layers that only pass, count or record deltas, where each of its chunks would cost every
    layer a step. Where a chunk must stand alone (pacing, a stream fault, Chat Completions), `expand`."""

    chunks: tuple[tuple[str, int], ...]  # each delta's text and the tokens it stands for
    tokens: int
    # When paced as a whole (llmsim/timing/pacing.py's RunPace): the first chunk's wait is over, the others'
    # are for whoever sends them. None: nothing waits between the chunks.
    pace: Any = None


@dataclass(frozen=True)
class ToolCallStart:
    """A call the client runs: kind `function_call` (arguments stream) or `custom_tool_call` (input streams)."""

    call_id: str
    name: str
    kind: str = "function_call"


@dataclass(frozen=True)
class ToolArgsDelta:
    text: str
    tokens: int = 1


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0


FinishReason = Literal["stop", "length", "tool_calls"]


@dataclass(frozen=True)
class Finish:
    reason: FinishReason
    usage: Usage


@dataclass(frozen=True)
class ToolItem:
    """A whole built-in tool item (web_search_call, mcp_call, mcp_approval_request, ...), without its id:
    the event builder emits the lifecycle events its type streams. `partial_images` are base64 images
    shown while an image_generation_call runs."""

    item: dict[str, Any]
    tokens: int = 0
    partial_images: tuple[str, ...] = ()


@dataclass(frozen=True)
class TextAnnotation:
    """A citation on the message text written so far (url_citation, file_citation, ...)."""

    annotation: dict[str, Any]


Delta = ReasoningDelta | TextDelta | TextRun | ToolCallStart | ToolArgsDelta | ToolItem | TextAnnotation | Finish


def last_user_text(turns: list[Turn]) -> str:
    return next((t.text for t in reversed(turns) if t.role == "user" and t.kind == "message"), "")


def pending(turns: list[Turn]) -> list[Turn]:
    """Items after the last user message that the model has not answered yet (tool outputs, approvals)."""
    tail: list[Turn] = []
    for turn in reversed(turns):
        if turn.role == "user" and turn.kind == "message":
            break
        if turn.kind == "message" and turn.role == "assistant":
            return []
        tail.append(turn)
    return tail[::-1]


def expand(deltas: Iterable[Delta]) -> Iterator[Delta]:
    """`deltas` with each TextRun as the TextDeltas it stands for."""
    for delta in deltas:
        if type(delta) is TextRun:
            for text, tokens in delta.chunks:
                yield TextDelta(text, tokens)
        else:
            yield delta


class Backend(Protocol):
    name: str

    @property
    def computes(self) -> bool:
        """Its deltas take time to make (real generation): a stream leaves as they come, never held back."""
        ...

    def generate(self, prompt: Prompt) -> Iterator[Delta]:
        """Yield deltas, ending with exactly one Finish."""
        ...
