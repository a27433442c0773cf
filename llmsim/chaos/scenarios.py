"""Scripted scenarios: deterministic replies for agent tests, from a YAML/JSON file or the admin API.

A scenario has `rules` (the first whose `match` holds answers the request) and ordered `turns`
(each request no rule answered takes the next one). A reply is text, tool calls with given
arguments, a reasoning summary and/or a fault (issue 4's `Fault`: an HTTP error or a stream
failure). `on_exhausted` says what happens once the turns run out: `simulate` (the simulator
answers), `repeat_last`, `cycle`, or `error`. State (position, rule counts, the transcript of
requests) lives in the worker process (`Player`), or in Redis for a whole fleet
(`llmsim.chaos.redis_state.RedisPlayer`).

A request refused before generation (an injected HTTP fault, a rate limit) never reached the model: the gate
(llmsim/chaos/admission.py) admits before the scenario directs, so it takes no turn and uses up no rule, and the
client's retry gets the reply it would have had; the transcript records it, marked `refused`.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections import deque
from dataclasses import replace
from pathlib import Path
from typing import Any, Literal

import orjson
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from llmsim import yamlload
from llmsim.chaos.faults import StreamFault, http_error
from llmsim.chaos.rules import STREAM_KINDS, Fault
from llmsim.errors import APIError
from llmsim.generation import Prompt, Script, ScriptedCall, last_user_text, pending
from llmsim.runtime import waits

TRANSCRIPT = 1000  # requests remembered, at most
TRANSCRIPT_BYTES = 16 * 1024 * 1024  # and at most this much request JSON, the newest kept


class ScenarioError(Exception):
    """A scenario that cannot be used; the message names the file (or source) and every bad field."""


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)  # built when a scenario is first loaded


class ToolCallSpec(Closed):
    name: str = Field(min_length=1)
    arguments: dict[str, Any] | str = Field(default_factory=dict)


class Reply(Closed):
    text: str | None = None
    tool_calls: list[ToolCallSpec] = Field(default_factory=list)
    reasoning_summary: str | None = None
    fault: Fault | None = None

    @field_validator("fault", mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        return {"kind": value} if isinstance(value, (str, int)) else value

    @model_validator(mode="after")
    def _says_something(self) -> Reply:
        if self.text is None and not self.tool_calls and self.reasoning_summary is None and self.fault is None:
            raise ValueError("a reply needs at least one of: text, tool_calls, reasoning_summary, fault")
        return self

    def script(self) -> Script:
        calls = tuple(ScriptedCall(c.name, c.arguments if isinstance(c.arguments, str) else json.dumps(c.arguments))
                      for c in self.tool_calls)
        return Script(self.text, calls, self.reasoning_summary)


class Match(Closed):
    """Every condition given must hold. `input_*` look at the latest user message, `tool_output_*` at the
    tool outputs the request brings back, `turn` at the request's 0-based index since the scenario loaded."""

    input_contains: str | None = None
    input_regex: str | None = None
    model: str | list[str] | None = None
    tool_output_contains: str | None = None
    tool_output_regex: str | None = None
    turn: int | list[int] | None = None
    metadata: dict[str, str] | None = None

    @field_validator("input_regex", "tool_output_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    def holds(self, prompt: Prompt, turn: int | None) -> bool:
        """Whether every condition holds; `turn=None` leaves the turn condition out (see `turns`)."""
        text = last_user_text(prompt.turns)
        outputs = " ".join(t.text for t in pending(prompt.turns) if t.role == "tool" or t.kind.endswith("_output"))
        models = [self.model] if isinstance(self.model, str) else self.model
        turns = self.turns()
        return ((self.input_contains is None or self.input_contains.lower() in text.lower())
                and (self.input_regex is None or re.search(self.input_regex, text) is not None)
                and (models is None or prompt.model in models or prompt.profile.id in models)
                and (self.tool_output_contains is None or (bool(outputs) and self.tool_output_contains in outputs))
                and (self.tool_output_regex is None or (bool(outputs)
                                                        and re.search(self.tool_output_regex, outputs) is not None))
                and (turns is None or turn is None or turn in turns)
                and (self.metadata is None or all(prompt.metadata.get(k) == v for k, v in self.metadata.items())))

    def turns(self) -> list[int] | None:
        return [self.turn] if isinstance(self.turn, int) else self.turn


class Rule(Reply):
    match: Match = Field(default_factory=Match)
    times: int | None = Field(None, ge=1, description="fire at most this many times")


class Scenario(Closed):
    name: str = "scenario"
    rules: list[Rule] = Field(default_factory=list)
    turns: list[Reply] = Field(default_factory=list)
    on_exhausted: Literal["simulate", "repeat_last", "cycle", "error"] = "simulate"

    @model_validator(mode="after")
    def _not_empty(self) -> Scenario:
        if not self.rules and not self.turns:
            raise ValueError("a scenario needs at least one rule or turn")
        if self.on_exhausted in ("repeat_last", "cycle") and not self.turns:
            raise ValueError(f"on_exhausted '{self.on_exhausted}' needs turns")
        return self


def problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in exc.errors())


def parse(data: Any, source: str = "scenario") -> Scenario:
    try:
        return Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(f"{source}: {problems(exc)}") from None


def parse_text(text: str, source: str = "scenario") -> Scenario:
    """YAML or JSON text (JSON is YAML)."""
    try:
        data = yamlload.safe_load(text)
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: not valid YAML or JSON: {exc}") from None
    except RecursionError:
        raise ScenarioError(f"{source}: nested too deeply") from None
    return parse(data if data is not None else {}, source)


def load(path: Path) -> Scenario:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ScenarioError(f"{path}: {exc.strerror}") from None
    return parse_text(text, str(path))


class Transcript:
    """The latest requests, oldest first, each body held as its JSON text: bounded by its size in bytes, not by
    a count alone (a thousand large prompts would otherwise pin their parsed bodies in memory)."""

    def __init__(self, max_entries: int = TRANSCRIPT, max_bytes: int = TRANSCRIPT_BYTES) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.size = 0
        self._entries: deque[tuple[dict[str, Any], bytes]] = deque()

    def append(self, entry: dict[str, Any], body: Any) -> None:
        """`entry` with `body` as its "request"; older entries go until it fits (a body over the whole budget
        is kept alone). orjson writes it (a 20 MB image: ~3 ms of the worker, where the standard library took 24);
        what orjson refuses (integers past 64 bits), the standard library."""
        try:
            text = orjson.dumps(body)
        except TypeError:  # orjson.JSONEncodeError
            text = json.dumps(body, separators=(",", ":")).encode()
        while self._entries and (len(self._entries) >= self.max_entries or self.size + len(text) > self.max_bytes):
            self.size -= len(self._entries.popleft()[1])
        self._entries.append((entry, text))
        self.size += len(text)

    def entries(self) -> list[dict[str, Any]]:
        return [{**entry, "request": json.loads(text)} for entry, text in list(self._entries)]

    def clear(self) -> None:
        self._entries.clear()
        self.size = 0

    def __len__(self) -> int:
        return len(self._entries)


class ScenarioMoved(Exception):
    """A request's admission found the fleet playing another scenario than the one it was directed by: it is
    directed again (llmsim/chaos/redis_state.py)."""


class Player:
    """Plays one scenario against incoming requests and keeps the transcript of what it saw."""

    def __init__(self, scenario: Scenario | None = None) -> None:
        self._lock = threading.Lock()
        self.transcript = Transcript()
        self.load(scenario)

    def load(self, scenario: Scenario | None) -> None:
        with self._lock:
            self.scenario = scenario
            self._rewind()

    def reset(self) -> None:
        with self._lock:
            self._rewind()

    def _rewind(self) -> None:
        self.requests = 0
        self.position = 0
        self.fired = [0] * len(self.scenario.rules) if self.scenario else []
        self.transcript.clear()

    def state(self) -> dict[str, Any]:
        with self._lock:
            scenario = self.scenario.model_dump(mode="json", exclude_none=True) if self.scenario else None
            return {"scenario": scenario, "requests": self.requests, "position": self.position}

    def recent(self, limit: int) -> list[dict[str, Any]]:
        """The transcript's latest `limit` entries, oldest first."""
        with self._lock:
            return self.transcript.entries()[-limit:]

    def direct(self, prompt: Prompt, body: Any, stream: bool, owner: str = "") -> tuple[Prompt, StreamFault | None]:
        """The prompt with its scripted reply, and a scripted stream fault to apply; a scripted HTTP fault or
        an exhausted `error` scenario raises. Every request is recorded, scenario or not, with its `owner` (the
        scope of its API key, llmsim/api/http.py `owner`): the transcript shows a key only its own."""
        with self._lock:
            turn = self.requests
            self.requests += 1
            step, reply = self._pick(prompt, turn)
            self.transcript.append({"index": turn, "time": time.time(), "model": prompt.model, "owner": owner,
                                    "step": step}, body)
        return play(prompt, reply, stream)

    def refused(self, prompt: Prompt, body: Any, error: BaseException, owner: str = "") -> None:
        """A request refused before generation (a fault, a rate limit): recorded, marked, at the turn it did not
        take; the scenario does not move (its retry gets the reply it would have had)."""
        with self._lock:
            self.transcript.append({"index": self.requests, "time": time.time(), "model": prompt.model,
                                    "owner": owner, "step": None, "refused": refusal(error)}, body)

    def deferred(self) -> bool:
        """Whether the request's admission records its turn (Redis with no scenario loaded); here, never."""
        return False

    def flush(self, refused: BaseException | None = None) -> None:
        """Record what `direct` left for the request's admission to record, if it did not (Redis); here, nothing.
        `refused`: the error that refused the request before generation."""

    def _pick(self, prompt: Prompt, turn: int) -> tuple[str | None, Reply | None]:
        scenario = self.scenario
        if scenario is None:
            return None, None
        for i, rule in enumerate(scenario.rules):
            if (rule.times is None or self.fired[i] < rule.times) and rule.match.holds(prompt, turn):
                self.fired[i] += 1
                return f"rules[{i}]", rule
        turns = scenario.turns
        if self.position < len(turns):
            self.position += 1
            return f"turns[{self.position - 1}]", turns[self.position - 1]
        policy = scenario.on_exhausted
        if policy == "repeat_last":
            return f"turns[{len(turns) - 1}]", turns[-1]
        if policy == "cycle":
            self.position = 1
            return "turns[0]", turns[0]
        if policy == "error":
            raise exhausted(scenario, turn)
        return None, None


def refusal(error: BaseException) -> dict[str, Any]:
    """A refused request's mark in the transcript: the status and code its client got."""
    if isinstance(error, APIError):
        return {"status": error.status, "code": error.code}
    return {"status": None, "code": type(error).__name__}


def exhausted(scenario: Scenario, turn: int) -> APIError:
    return APIError(f"LLMSim scenario '{scenario.name}' has no reply left for request {turn} "
                    f"({len(scenario.turns)} turns, {len(scenario.rules)} rules, none matched).", status=400,
                    code="scenario_exhausted")


def play(prompt: Prompt, reply: Reply | None, stream: bool) -> tuple[Prompt, StreamFault | None]:
    """A picked reply applied: the scripted prompt and stream fault; an HTTP fault raises, a timeout waits."""
    if reply is None:
        return prompt, None
    fault = _fault(reply.fault, prompt.model, stream) if reply.fault is not None else None
    if reply.text is None and not reply.tool_calls and reply.reasoning_summary is None:
        return prompt, fault
    return replace(prompt, script=reply.script()), fault


def _fault(fault: Fault, model: str, stream: bool) -> StreamFault | None:
    if fault.kind in STREAM_KINDS:
        return StreamFault(fault, stream)
    if fault.kind == "timeout":
        waits.wait(fault.seconds or 0.0)
        return None
    raise http_error(fault, model, {})


def validate_command(path: Path, quiet: bool = False) -> int:
    """`llmsim scenario validate FILE`: 0 and a summary when the file is good, else 2 and its problems."""
    try:
        scenario = load(path)
    except ScenarioError as exc:
        print(f"llmsim: {exc}", file=sys.stderr)
        return 2
    if not quiet:
        print(f"{path}: ok: scenario '{scenario.name}', {len(scenario.rules)} rules, {len(scenario.turns)} turns, "
              f"on_exhausted={scenario.on_exhausted}")
    return 0
