"""Prompts built by hand for the recogniser tests (tests/test_formats.py and its property test): no server."""

from __future__ import annotations

import random
from typing import Any

from faker import Faker

from llmsim.backends.sim import formats
from llmsim.generation import Prompt, Turn
from llmsim.timing.profiles import Profile


def prompt(system: str, *messages: str | Turn, text_format: dict[str, Any] | None = None, **options: Any) -> Prompt:
    """`messages` alternate user, assistant, user…; a Turn is taken as it is."""
    turns = [Turn("system", system)] if system else []
    for i, message in enumerate(messages):
        turns.append(message if isinstance(message, Turn) else Turn("user" if i % 2 == 0 else "assistant", message))
    return Prompt(model="gpt-4o", profile=Profile(id="gpt-4o"), turns=turns, input_tokens=0,
                  text_format=text_format or {"type": "text"}, **options)


def respond(p: Prompt, seed: int = 0) -> str | None:
    rng = random.Random(seed)
    fake = Faker()
    fake.seed_instance(seed)
    return formats.respond(p, rng, fake)
