"""JSON asked for in words, by schema or by example, fenced or not: instructor's JSON and MD_JSON modes,
LangChain's format instructions, "respond with a JSON object with the keys …, where … is an integer".
Under a `json_object` response format this always answers (a model must); under plain text only when the
prompt asks for JSON."""

from __future__ import annotations

import re

from llmsim.backends.sim import prompted
from llmsim.backends.sim.formats import values
from llmsim.backends.sim.formats.request import Request

FALLBACK = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_ASKS = re.compile(r"(?:^|[.!?:\n]\s*|\b(?:please|must|should|always|only|and|then|will)\s+)"
                   r"(?:respond|reply|answer|return|output|provide|give|produce|format|write|generate|emit)\b"
                   r"[^.\n]{0,80}?\bJSON\b(?![/-])|\b(?:in|as|using)\s+(?:valid\s+|a\s+|strict\s+)?JSON\b(?![/-])|"
                   r"\bJSON\s+only\b|```json|\bjson\s+code\s?block", re.IGNORECASE | re.MULTILINE)
_MENTIONS = re.compile(r"json", re.IGNORECASE)  # in every branch of _ASKS: the same case rules, a fast scan
_SENTENCE_END = re.compile(r"[.!?\n]")
_FENCE = re.compile(r"```json|\bjson\s+code\s?block|\bcode\s?block\b|\bmarkdown\b", re.IGNORECASE)


def respond(req: Request) -> str | None:
    kind = req.text_format
    if kind == "json_schema":
        return None
    asks = kind == "json_object" or _asks(req.instructions[-4000:]) or _asks(req.user[-4000:])
    if not asks:
        return None
    schema = prompted.requested_schema(req.prompt.turns) or FALLBACK
    body = values.dumps(values.instance(schema, req, req.first_user if _instruction_only(req) else req.user))
    if kind == "text" and (_FENCE.search(req.instructions[-4000:]) or _FENCE.search(req.user[-4000:])):
        return f"```json\n{body}\n```"
    return body


def _asks(text: str) -> bool:
    """An instruction to answer in JSON, not a question about JSON ("How do I return JSON from Flask?").
    A text that never says "json" is passed over before _ASKS, whose leading alternatives try every position."""
    if not _MENTIONS.search(text):
        return False
    for match in _ASKS.finditer(text):
        end = _SENTENCE_END.search(text, match.end())
        if end is None or end.group() != "?":
            return True
    return False


def _instruction_only(req: Request) -> bool:
    """instructor's MD_JSON mode adds its JSON request as the last user message; the content is before it."""
    return len(req.user) < 200 and "json" in req.user.lower() and req.first_user != req.user
