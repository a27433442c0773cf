"""What every recogniser reads from a Prompt: the instructions, the question, the turns since, and the
tool results already in the conversation. Built once per request; each text is cut to a bound, so a huge
prompt costs no more than a large one."""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from llmsim.generation import Prompt, last_user_text

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

MAX_SCAN_CHARS = 60_000  # of each text's end: the instructions that shape the answer are near the question
MAX_OBSERVATIONS = 16  # the latest ones: an answer quotes a few
MAX_OBSERVATION_CHARS = 8000
_OBSERVATION = re.compile(r"^\s*Observation:", re.MULTILINE)


@dataclass
class Request:
    prompt: Prompt
    rng: random.Random
    fake: Faker
    hints: Mapping[str, str] = field(default_factory=dict)  # string values by property name (tools.Planner._hints)

    @cached_property
    def instructions(self) -> str:
        """The system and developer messages: where frameworks spell out the format they parse."""
        return "\n".join(t.text for t in self.prompt.turns if t.role == "system" and t.kind == "message")[
            -MAX_SCAN_CHARS:]

    @cached_property
    def messages(self) -> str:
        """Every user and assistant message after the instructions, in order."""
        return "\n".join(t.text for t in self.prompt.turns if t.role in ("user", "assistant")
                         and t.kind == "message")[-MAX_SCAN_CHARS:]

    @cached_property
    def user(self) -> str:
        return last_user_text(self.prompt.turns)[-MAX_SCAN_CHARS:]

    @cached_property
    def first_user(self) -> str:
        """The task, for agents that append observations as later user messages."""
        return next((t.text for t in self.prompt.turns if t.role == "user" and t.kind == "message"), "")[
            -MAX_SCAN_CHARS:]

    @cached_property
    def everything(self) -> str:
        return (self.instructions + "\n" + self.messages)[-MAX_SCAN_CHARS:]

    @property
    def text_format(self) -> str:
        return str(self.prompt.text_format.get("type", "text"))


def observations(text: str) -> list[str]:
    """The bodies of `Observation:` blocks in a ReAct-style transcript, in order."""
    out = []
    for match in list(_OBSERVATION.finditer(text))[-MAX_OBSERVATIONS:]:
        rest = text[match.end():match.end() + MAX_OBSERVATION_CHARS]
        stop = re.search(r"^\s*(?:Thought|Action|Final Answer|Answer|Question)\s*:", rest, re.MULTILINE)
        body = (rest[:stop.start()] if stop else rest).strip()
        if body:
            out.append(body)
    return out
