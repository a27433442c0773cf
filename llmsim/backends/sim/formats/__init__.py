"""Recognisers of the formats agent frameworks ask for in their prompts, tried in a fixed order; the first
that claims a request writes its answer text. A request none claims keeps the mode's text (`text.py`).

Each module has one `respond(Request) -> str | None`. Order matters where formats nest: a dspy prompt
mentions JSON, a ReAct prompt mentions JSON for its action input, a code agent's prompt shows ReAct-like
"Thought:" lines; the more specific recogniser comes first.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from llmsim.backends.sim.formats import code_agent, dspy_chat, dspy_json, edit_blocks, json_words, react, xml_tags
from llmsim.backends.sim.formats.request import Request
from llmsim.generation import Prompt

if TYPE_CHECKING:
    from faker import Faker  # a type here; Faker itself is imported at its first use (llmsim/backends/sim/fake.py)

RECOGNISERS: tuple[tuple[str, Callable[[Request], str | None]], ...] = (
    ("dspy_chat", dspy_chat.respond),
    ("dspy_json", dspy_json.respond),
    ("edit_blocks", edit_blocks.respond),
    ("code_agent", code_agent.respond),
    ("react", react.respond),
    ("xml_tags", xml_tags.respond),
    ("json_words", json_words.respond),
)


def respond(prompt: Prompt, rng: random.Random, fake: Faker, hints: Mapping[str, str] | None = None) -> str | None:
    """The answer text of the first recogniser that claims the request, or None."""
    request = Request(prompt, rng, fake, hints if hints is not None else {})  # read only when a recogniser claims it
    for _, recognise in RECOGNISERS:
        answer = recognise(request)
        if answer is not None:
            return answer
    return None
