"""Property: whatever JSON Schema a prompt gives, and however it asks for JSON (the schema pasted as
instructor's JSON mode does, an example, keys named in a sentence with their types, a ```json fence as in
MD_JSON), the answer parses and validates. No server: the recognisers are called directly."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from formats_kit import prompt, respond

NAMES = st.from_regex(r"[a-z][a-z_]{1,11}", fullmatch=True).filter(lambda n: n not in {"type", "properties"})


@st.composite
def scalar(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["string", "integer", "number", "boolean", "enum", "array"]))
    if kind == "enum":
        return {"type": "string", "enum": draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))}
    if kind == "array":
        return {"type": "array", "items": {"type": "string"}}
    if kind in ("integer", "number"):
        low = draw(st.integers(-1000, 1000))
        return {"type": kind, "minimum": low, "maximum": low + draw(st.integers(0, 500))}
    return {"type": kind}


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(NAMES, min_size=1, max_size=6, unique=True))
    properties = {name: draw(scalar()) for name in names}
    nested = draw(st.booleans())
    if nested:
        properties["detail"] = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}
    return {"type": "object", "properties": properties, "required": list(properties)}


def example_of(schema: dict[str, Any]) -> dict[str, Any]:
    samples = {"string": "text", "integer": 3, "number": 1.5, "boolean": True, "array": ["a"], "object": {"note": "n"}}
    return {name: sub["enum"][0] if "enum" in sub else samples[sub["type"]]
            for name, sub in schema["properties"].items()}


def parsed(answer: str | None) -> Any:
    assert answer is not None
    fenced = re.fullmatch(r"```json\n(.*)\n```", answer, re.DOTALL)
    return json.loads(fenced.group(1) if fenced else answer)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=schemas(), phrasing=st.sampled_from(["schema", "schema_md", "schema_object_format", "example"]),
       seed=st.integers(0, 2**16))
def test_json_asked_by_schema_or_example_parses_and_validates(schema: dict[str, Any], phrasing: str,
                                                              seed: int) -> None:
    if phrasing == "example":
        example = json.dumps(example_of(schema))
        p = prompt("", f"Describe the weather. Respond only with JSON like this example: {example}")
        expected: dict[str, Any] = {"type": "object", "required": list(schema["properties"]), "properties": {
            name: {"type": "string"} if "enum" in sub else {"type": sub["type"]}
            for name, sub in schema["properties"].items()}}
    else:
        system = ("As a genius expert, your task is to understand the content and provide the parsed objects in json "
                  f"that match the following json_schema:\n\n{json.dumps(schema, indent=2)}\n\nMake sure to return "
                  "an instance of the JSON, not the schema itself")
        tail = ["", "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA"] \
            if phrasing == "schema_md" else []
        p = prompt(system, "Extract the details of the trip to Rome.", *tail,
                   text_format={"type": "json_object"} if phrasing == "schema_object_format" else None)
        expected = schema
    jsonschema.validate(parsed(respond(p, seed)), expected)


@settings(max_examples=60, deadline=None)
@given(keys=st.lists(st.tuples(NAMES, st.sampled_from(["string", "integer", "number", "boolean"])), min_size=1,
                     max_size=5, unique_by=lambda k: k[0]),
       lead=st.sampled_from(["Respond with a JSON object with the keys", "Return JSON with the fields",
                             "Answer in JSON using the keys"]),
       seed=st.integers(0, 2**16))
def test_keys_named_in_words_get_the_types_the_sentence_gives(keys: list[tuple[str, str]], lead: str,
                                                              seed: int) -> None:
    listed = ", ".join(f"'{name}'" for name, _ in keys)
    typed = " and ".join(f"{name} is a {kind}" if kind != "integer" else f"{name} is an integer" for name, kind in keys)
    answer = parsed(respond(prompt("", f"Plan a trip to Rome. {lead} {listed}, where {typed}."), seed))
    jsonschema.validate(answer, {"type": "object", "required": [n for n, _ in keys],
                                 "properties": {name: {"type": kind} for name, kind in keys}})
