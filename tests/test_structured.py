"""Structured outputs: json_schema (strict) and json_object answers, `responses.parse`, the real API's 400s,
and generated JSON checked against many random schemas (hypothesis)."""

from __future__ import annotations

import json
import random
from enum import Enum
from typing import Any, Literal

import jsonschema
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from llmsim.backends.sim import jsongen
from llmsim.shared.schema_checks import schema_error

CHECKER = jsonschema.FormatChecker()


class Unit(str, Enum):  # noqa: UP042 (the str mixin a client's model is written with)
    celsius = "celsius"
    fahrenheit = "fahrenheit"


class Reading(BaseModel):
    city: str
    temperature: float
    unit: Unit
    note: str | None


class Report(BaseModel):
    title: str
    readings: list[Reading]
    status: Literal["ok", "partial"]
    parent: Report | None


def test_json_schema_output_validates(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
                                               "email": {"type": "string", "format": "email"}},
              "required": ["name", "age", "email"], "additionalProperties": False}
    response = client.responses.create(model="gpt-4o", input="Make up a person.", text={
        "format": {"type": "json_schema", "name": "person", "schema": schema, "strict": True}})
    jsonschema.validate(json.loads(response.output_text), schema, format_checker=CHECKER)
    assert response.text.format.type == "json_schema" and response.text.format.name == "person"


def test_json_object_output_is_a_json_object(client: openai.OpenAI) -> None:
    response = client.responses.create(model="gpt-4o", input="Answer in JSON.",
                                       text={"format": {"type": "json_object"}})
    assert isinstance(json.loads(response.output_text), dict)


def test_json_object_needs_the_word_json_in_the_input(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="Answer please.", text={"format": {"type": "json_object"}})
    assert "must contain the word 'json'" in caught.value.body["message"] and caught.value.body["param"] == "input"


def test_parse_with_a_pydantic_model(client: openai.OpenAI) -> None:
    for seed in range(5):
        parsed = client.responses.parse(model="gpt-4o", input="Weather report please.", text_format=Report,
                                        extra_headers={"X-LLMSim-Seed": str(seed)})
        assert isinstance(parsed.output_parsed, Report)
        assert all(isinstance(r.unit, Unit) for r in parsed.output_parsed.readings)


def test_stream_with_a_pydantic_model(client: openai.OpenAI) -> None:
    with client.responses.stream(model="gpt-4o", input="Weather report please.", text_format=Report) as stream:
        deltas = [e.delta for e in stream if e.type == "response.output_text.delta"]
        final = stream.get_final_response()
    assert isinstance(final.output_parsed, Report) and "".join(deltas) == final.output_text


def test_an_invalid_schema_is_the_real_apis_400(client: openai.OpenAI) -> None:
    bad = {"type": "object", "properties": {"a": {"type": "strin"}}}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="hi",
                                text={"format": {"type": "json_schema", "name": "bad", "schema": bad}})
    error = caught.value
    assert error.status_code == 400 and error.code == "invalid_json_schema"
    assert error.body["param"] == "text.format.schema"
    assert error.body["message"].startswith("Invalid schema for response_format 'bad'")


def test_strict_requires_every_property_required(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}, "required": ["a"],
              "additionalProperties": False}
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="hi", text={
            "format": {"type": "json_schema", "name": "s", "schema": schema, "strict": True}})
    assert "Missing 'b'" in caught.value.message


def test_a_schema_whose_root_is_not_an_object_is_a_400(client: openai.OpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        client.responses.create(model="gpt-4o", input="hi", text={
            "format": {"type": "json_schema", "name": "s", "schema": {"type": "array", "items": {"type": "string"}}}})
    assert caught.value.code == "invalid_json_schema"


def test_a_schema_no_value_satisfies_still_gets_an_answer(client: openai.OpenAI) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 5, "maximum": 1},
                                               "s": {"type": "string", "pattern": "^a{100000}$"}},
              "required": ["n", "s"], "additionalProperties": False}
    response = client.responses.create(model="gpt-4o", input="hi", text={
        "format": {"type": "json_schema", "name": "impossible", "schema": schema, "strict": True}})
    answer = json.loads(response.output_text)
    assert response.status == "completed" and isinstance(answer["n"], int) and isinstance(answer["s"], str)


# --- random schemas ---------------------------------------------------------------------------

NAMES = st.from_regex(r"[a-z][a-z_]{0,7}", fullmatch=True)
PATTERNS = [r"^[a-z]{3,6}$", r"^\d{3}-\d{4}$", r"^[A-Z][a-z]+$", r"^(yes|no|maybe)$"]
FORMATS = ["email", "ipv4", "ipv6", "uuid", "date", "date-time"]


@st.composite
def strings(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["plain", "enum", "format", "pattern", "length"]))
    if kind == "enum":
        return {"type": "string", "enum": draw(st.lists(st.text(max_size=8), min_size=1, max_size=4, unique=True))}
    if kind == "format":
        return {"type": "string", "format": draw(st.sampled_from(FORMATS))}
    if kind == "pattern":
        return {"type": "string", "pattern": draw(st.sampled_from(PATTERNS))}
    if kind == "length":
        low = draw(st.integers(0, 10))
        return {"type": "string", "minLength": low, "maxLength": low + draw(st.integers(0, 10))}
    return {"type": "string"}


@st.composite
def numbers(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["integer", "number"]))
    schema: dict[str, Any] = {"type": kind}
    low = draw(st.one_of(st.none(), st.integers(-1000, 1000)))
    if low is not None:
        schema["minimum"] = low
        schema["maximum"] = low + draw(st.integers(0, 500))
    if draw(st.booleans()):
        step = draw(st.sampled_from([2, 5, 0.5, 0.25]))
        schema["exclusiveMinimum" if low is None else "multipleOf"] = step
        if low is not None:
            schema["maximum"] += 5  # at least one multiple in range
    return schema


SCALARS = st.one_of(strings(), numbers(), st.just({"type": "boolean"}), st.just({"type": "null"}),
                    st.builds(lambda v: {"const": v}, st.one_of(st.integers(), st.text(max_size=5))))


def containers(children: st.SearchStrategy[dict[str, Any]], strict: bool) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def objects(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(NAMES, children, max_size=5))
        required = list(properties) if strict else draw(st.lists(st.sampled_from(list(properties)), unique=True)) \
            if properties else []
        return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}

    @st.composite
    def arrays(draw: st.DrawFn) -> dict[str, Any]:
        low = draw(st.integers(0, 3))
        return {"type": "array", "items": draw(children), "minItems": low, "maxItems": low + draw(st.integers(0, 3))}

    # Mapped, not filtered: a filter that rejects most draws fails hypothesis' health check at random.
    nullable = children.map(lambda s: {**s, "type": [s["type"], "null"]}
                            if isinstance(s.get("type"), str) and s["type"] != "null" and "enum" not in s
                            else {"anyOf": [s, {"type": "null"}]})
    unions = st.lists(children, min_size=1, max_size=3).map(lambda branches: {"anyOf": branches})
    return st.one_of(objects(), arrays(), nullable, unions)


def schemas(strict: bool) -> st.SearchStrategy[dict[str, Any]]:
    tree = st.recursive(SCALARS, lambda children: containers(children, strict), max_leaves=12)
    root = st.dictionaries(NAMES, tree, min_size=1, max_size=5)
    return root.map(lambda properties: {"type": "object", "properties": properties, "required": list(properties),
                                        "additionalProperties": False})


@settings(max_examples=300, deadline=None)
@given(schema=schemas(strict=False), seed=st.integers(0, 2**32))
def test_generated_values_validate_against_random_schemas(schema: dict[str, Any], seed: int) -> None:
    value = jsongen.generate(schema, random.Random(seed))
    jsonschema.validate(value, schema, format_checker=CHECKER)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(schema=schemas(strict=True))
def test_structured_outputs_and_arguments_validate_through_the_server(client: openai.OpenAI,
                                                                      schema: dict[str, Any]) -> None:
    assert schema_error(schema, strict=True, require_object=True) is None
    text = client.responses.create(model="gpt-4o", input="JSON please", text={
        "format": {"type": "json_schema", "name": "random", "schema": schema, "strict": True}})
    jsonschema.validate(json.loads(text.output_text), schema, format_checker=CHECKER)
    tool = {"type": "function", "name": "random_tool", "parameters": schema, "strict": True}
    call = client.responses.create(model="gpt-4o", input="go", tools=[tool], tool_choice="required")
    jsonschema.validate(json.loads(call.output[0].arguments), schema, format_checker=CHECKER)
