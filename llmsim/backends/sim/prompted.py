"""The JSON shape a prompt asks for under `json_object`: a JSON Schema, a JSON example or a list of keys.

Clients that ask for JSON without a schema parameter spell the shape out in the prompt (pydantic-ai's
`PromptedOutput` pastes the schema, LangChain's format instructions paste an example schema and then the
real one, people write "with keys `title` and `year`"); a model follows it, so the simulator does too.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from llmsim.generation import Turn
from llmsim.shared.schema_checks import schema_error

MAX_SCAN_CHARS = 100_000  # of the prompt's end: the instructions that matter are near the question
MAX_ATTEMPTS = 256  # JSON decodes tried: bounded work whatever the prompt holds
KEYS = re.compile(r"\b(?:keys?|fields?|properties|attributes)\b"  # the list ends where a clause about one key starts
                  r"(?P<list>(?:(?!\b(?:where|which|whose|one of|should|must)\b)[^.\n{])*)", re.IGNORECASE)
QUOTED = re.compile(r"[`\"']([A-Za-z_][A-Za-z0-9_]{0,63})[`\"']"  # a key, and the type a sentence may give it
                    r"(?:\s*(?:\(|:|,?\s*as\s+(?:an?\s+)?)\s*(string|str|text|integer|int|number|float|decimal|"
                    r"boolean|bool|array|list|object)\b)?", re.IGNORECASE)
_TYPED = re.compile(r"[`\"']?(?P<key>[A-Za-z_]\w{0,63})[`\"']?\s+(?:is|should be|must be|as)\s+(?:an?\s+)?"
                    r"(?P<kind>string|str|text|integer|int|number|float|decimal|boolean|bool|array|list)\b"
                    r"(?:[^.\n]{0,20}?\b(?:from|between)\s+(?P<low>-?\d{1,9})\s+(?:to|and)\s+(?P<high>-?\d{1,9}))?",
                    re.IGNORECASE)
_ONE_OF = re.compile(r"[`\"']?(?P<key>[A-Za-z_]\w{0,63})[`\"']?\s+(?:is|should be|must be)\s+(?:exactly\s+)?"
                     r"one of:?\s*(?P<choices>(?:[`\"'][^`\"'\n]{1,60}[`\"'](?:,?\s*(?:or\s+)?)?){1,32})",
                     re.IGNORECASE)
TYPES = {"str": "string", "text": "string", "int": "integer", "float": "number", "decimal": "number",
         "bool": "boolean", "list": "array"}


def requested_schema(turns: list[Turn]) -> dict[str, Any] | None:
    """The schema of the JSON the system and user turns ask for, or None when they name no shape.

    A schema found in the text wins over an example, the last of each over earlier ones (format instructions
    show an example schema before the real one); keys named in a sentence come last."""
    text = "\n".join(t.text for t in turns if t.role in ("system", "user") and t.kind == "message")
    return _schema_in(text[-MAX_SCAN_CHARS:])


@functools.lru_cache(maxsize=256)  # agents send the same instructions every turn; the result is never mutated
def _schema_in(text: str) -> dict[str, Any] | None:
    schemas, examples = _objects(text)
    if schemas:
        return schemas[-1]
    if examples:
        return _schema_of(examples[-1])
    keys = [(key, kind.lower()) for match in KEYS.finditer(text) for key, kind in QUOTED.findall(match.group("list"))]
    if keys:
        types = {key: TYPES.get(kind, kind or "string") for key, kind in reversed(keys)}  # the first mention wins
        unique = list(dict.fromkeys(key for key, _ in keys))
        properties: dict[str, dict[str, Any]] = {key: {"type": types[key]} for key in unique}
        _refine(text, properties)
        return {"type": "object", "properties": properties, "required": unique}
    return None


def _refine(text: str, properties: dict[str, dict[str, Any]]) -> None:
    """What sentences say of a key after naming it: "where `rating` is an integer from 1 to 10", "`tone`
    should be one of 'positive', 'negative'"."""
    for match in _TYPED.finditer(text):
        prop = properties.get(match.group("key"))
        if prop is None:
            continue
        kind = match.group("kind").lower()
        prop["type"] = TYPES.get(kind, kind)
        if match.group("low") is not None and prop["type"] in ("integer", "number"):
            low, high = sorted((int(match.group("low")), int(match.group("high"))))
            prop.update(minimum=low, maximum=high)
    for match in _ONE_OF.finditer(text):
        prop = properties.get(match.group("key"))
        choices = re.findall(r"[`\"']([^`\"'\n]{1,60})[`\"']", match.group("choices"))
        if prop is not None and choices:
            prop.clear()
            prop.update(type="string", enum=list(dict.fromkeys(choices)))


def _objects(text: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The JSON objects written in `text`: (schemas, examples), in order."""
    decoder = json.JSONDecoder()
    schemas: list[dict[str, Any]] = []
    examples: list[dict[str, Any]] = []
    position, attempts = text.find("{"), 0
    while position >= 0 and attempts < MAX_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, position)
        except (ValueError, RecursionError):
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict) and value:
            schema = _as_schema(value)
            if schema is not None:
                schemas.append(schema)
            else:
                examples.append(value)
        position = text.find("{", end)
    return schemas, examples


def _as_schema(value: dict[str, Any]) -> dict[str, Any] | None:
    """`value` as an object schema when it is one (properties of schemas, or `$ref`/`$defs`), else None."""
    properties = value.get("properties")
    is_schema = isinstance(properties, dict) and properties and all(isinstance(p, dict) for p in properties.values())
    if not is_schema and not ("$ref" in value and isinstance(value.get("$defs"), dict)):
        return None
    schema = {"type": "object", **value} if "type" not in value and "$ref" not in value else value
    return schema if schema_error(schema, strict=False, require_object=False) is None else None


def _schema_of(example: Any) -> dict[str, Any]:
    """A schema every value shaped like `example` fits: same keys, same kinds of values."""
    if isinstance(example, dict):
        return {"type": "object", "properties": {k: _schema_of(v) for k, v in example.items()},
                "required": list(example)}
    if isinstance(example, list):
        return {"type": "array", "items": _schema_of(example[0])} if example else {"type": "array"}
    if isinstance(example, bool):
        return {"type": "boolean"}
    if isinstance(example, int):
        return {"type": "integer"}
    if isinstance(example, float):
        return {"type": "number"}
    return {"type": "string"} if isinstance(example, str) else {"type": "null"}
