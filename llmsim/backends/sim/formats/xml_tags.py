"""XML-tagged outputs: when the prompt asks for the answer inside tags ("put your answer in <answer></answer>
tags", "think in <thinking> tags, then answer in <answer> tags"), each named tag in order, holding text
that fits its name."""

from __future__ import annotations

import re

from llmsim.backends.sim.formats import values
from llmsim.backends.sim.formats.request import Request

MAX_TAGS = 8
_ASK = re.compile(r"(?:\b(?:in|inside|within|between|wrap\w*|enclose\w*|put|place|use|using|surround\w*)\b[^.\n]{0,60}?"
                  r"<(?P<a>[A-Za-z][\w-]{0,30})>|<(?P<b>[A-Za-z][\w-]{0,30})>(?:\s*</[\w-]+>)?\s*(?:xml\s+)?tags?\b)",
                  re.IGNORECASE)
THINKING = frozenset({"thinking", "thought", "thoughts", "reasoning", "scratchpad", "analysis", "plan"})


def respond(req: Request) -> str | None:
    if req.text_format != "text":
        return None
    asked = req.instructions[-4000:] + "\n" + req.user[-4000:]
    if "<" not in asked:  # every ask names a tag: most prompts are passed over before _ASK's slow scan
        return None
    names = list(dict.fromkeys(m.group("a") or m.group("b") for m in _ASK.finditer(asked)))[:MAX_TAGS]
    names = [n for n in names if n.lower() not in {"br", "p", "b", "i", "div", "span", "code", "pre"}]
    if not names:
        return None
    question = re.sub(r"<[^>]{0,40}>", " ", req.user)
    parts = []
    for name in names:
        body = values.plan(question) if name.lower() in THINKING else values.answer(req, question)
        parts.append(f"<{name}>\n{body}\n</{name}>")
    return "\n".join(parts)
