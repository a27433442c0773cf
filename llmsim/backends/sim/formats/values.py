"""Values of a declared type, chosen as a careful model would: numbers the question computes or names,
the allowed choice that best fits, lists of the question's key nouns, and short answers that name them
(quoting tool results when there are some)."""

from __future__ import annotations

import ast
import json
import operator
import re
from collections.abc import Sequence
from typing import Any

from llmsim.backends.sim import intent, jsongen, phrases, text, tools
from llmsim.backends.sim.formats.request import Request
from llmsim.shared.schema_checks import schema_error

MAX_QUOTE_CHARS = 300  # of one tool result quoted in an answer
_EXPRESSION = re.compile(r"\d[\d\s.+\-*/×x÷()]*[+\-*/×÷][\d\s.+\-*/×x÷()]*\d")
_NUMBER = re.compile(r"-?\b\d+(?:\.\d+)?\b")
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
SENTENCE_FIELDS = frozenset("answer response reasoning explanation summary description text content message reason "
                            "rationale thought justification comment feedback analysis output result".split())
NAME_FIELDS = frozenset("title name topic subject category label keyword heading".split())


def arithmetic(question: str) -> float | int | None:
    """The value of the first arithmetic expression in the question ('What is 2+2?' → 4), if any."""
    match = _EXPRESSION.search(question[:2000])
    if not match or len(match.group()) > 80:
        return None
    try:
        value = _evaluate(ast.parse(match.group().replace("×", "*").replace("÷", "/"), mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _evaluate(node: ast.AST) -> float | int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_evaluate(node.operand)
    raise ValueError("not arithmetic")


def integer(req: Request, question: str) -> int:
    value = arithmetic(question)
    if value is not None:
        return round(value)
    numbers = _NUMBER.findall(question)
    return int(float(numbers[0])) if numbers else req.rng.randint(1, 10)


def number(req: Request, question: str) -> float:
    value = arithmetic(question)
    if value is not None:
        return float(value)
    return round(req.rng.uniform(0.5, 1.0), 2)  # a score or confidence, the usual float output


def choice(options: list[str], question: str, req: Request) -> str:
    """The option sharing most words with the question; a seeded pick when none does."""
    words = {w.lower() for w in re.findall(r"[A-Za-z]{3,}", question)}
    scored = [(sum(w in words for w in re.findall(r"[a-z]{3,}", o.lower())), -i, o) for i, o in enumerate(options)]
    best = max(scored) if scored else (0, 0, "")
    return best[2] if best[0] > 0 else req.rng.choice(options) if options else ""


def topics(question: str) -> list[str]:
    found = list(intent.read(question).topics)
    return found or [phrases.FALLBACK_TOPIC]


def answer(req: Request, question: str, results: Sequence[tuple[str, str]] = ()) -> str:
    """A short answer: it quotes the tool results when there are some, else a direct sentence or two that
    names the question's key nouns."""
    if results:
        quoted = "; ".join(f"{name} returned {quote(text)}" if name else quote(text) for name, text in results)
        return f"Based on the results, {quoted.rstrip('.!?…')}."
    computed = arithmetic(question)
    if computed is not None:
        return f"The answer is {computed}."
    slots = text.slot_values(intent.read(question))
    first = text.fill(req.rng.choice(phrases.DIRECT_ANSWERS), slots)
    body = [b for b in phrases.BODY if "{other}" in b] if slots["other"] != phrases.FALLBACK_OTHER else \
        [b for b in phrases.BODY if "{other}" not in b]  # the question's second subject gets named too
    second = text.fill(req.rng.choice(body), slots)
    return f"{first[:1].upper()}{first[1:]} {second}"


def _first_sentence(req: Request, question: str) -> str:
    slots = text.slot_values(intent.read(question))
    sentence = text.fill(req.rng.choice(phrases.DIRECT_ANSWERS), slots)
    return sentence[:1].upper() + sentence[1:]


def plan(question: str, words: int = 20) -> str:
    """Reasoning in whole sentences: the plan for the answer, at least `words` words of it."""
    read = intent.read(question)
    filled = text.slot_values(read)
    out: list[str] = []
    for sentence in phrases.PLANS[read.shape]:
        out.append(text.fill(sentence, filled))
        if sum(len(s.split()) for s in out) >= words:
            break
    return " ".join(out)


def quote(result: str) -> str:
    flat = " ".join(result.split())
    return flat if len(flat) <= MAX_QUOTE_CHARS else flat[:MAX_QUOTE_CHARS].rsplit(" ", 1)[0] + "…"


def string_hints(schema: Any, req: Request, question: str, results: Sequence[tuple[str, str]] = ()) -> dict[str, str]:
    """Free-text values for a schema's string properties, by name: sentences for answer-like fields, the key
    noun for name-like ones; the request's own hints (a place, the query) win."""
    hints: dict[str, str] = {}
    names: set[str] = set()
    _property_names(schema, names, 0)
    for name in names:
        lower = name.lower()
        if lower in SENTENCE_FIELDS:
            hints[lower] = answer(req, question, results)
        elif lower in NAME_FIELDS:
            hints[lower] = topics(question)[0]
        elif lower not in jsongen.NAME_HINTS:  # a field nothing else names: a sentence about the question
            hints[lower] = _first_sentence(req, question)
    return {**hints, **req.hints, **tools.question_hints(question)}


def _property_names(schema: Any, out: set[str], depth: int) -> None:
    if not isinstance(schema, dict) or depth > 4:
        return
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, dict) and sub.get("type", "string") == "string" and "enum" not in sub \
                and "format" not in sub and "pattern" not in sub:
            out.add(name)
        _property_names(sub, out, depth + 1)
    _property_names(schema.get("items"), out, depth + 1)
    for defs in ("$defs", "definitions"):
        for sub in (schema.get(defs) or {}).values():
            _property_names(sub, out, depth + 1)


def instance(schema: Any, req: Request, question: str, results: Sequence[tuple[str, str]] = ()) -> Any:
    """A schema-valid value whose free text reads like an answer to the question."""
    if isinstance(schema, dict) and schema.get("type") == "array" and \
            isinstance(schema.get("items"), dict) and schema["items"].get("type") == "string" and \
            set(schema["items"]) <= {"type"} and set(schema) <= {"type", "items"}:
        return topics(question)
    return jsongen.generate(schema, req.rng, req.fake, string_hints(schema, req, question, results))


def valid(value: Any, schema: Any) -> bool:
    """Whether `value` fits `schema` (a schema that cannot be checked counts as fitting)."""
    if not isinstance(schema, dict) or schema_error(schema, strict=False, require_object=False) is not None:
        return True
    from jsonschema import Draft202012Validator
    return Draft202012Validator(schema).is_valid(value)


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
