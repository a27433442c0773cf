"""`json_object` answers follow the shape the prompt asks for: a JSON Schema, a JSON example, or named keys
(how pydantic-ai's PromptedOutput and LangChain's json_mode ask); with none, the plain one-key object."""

from __future__ import annotations

import json

import jsonschema
import openai
import pytest

MOVIE = {"type": "object", "properties": {"title": {"type": "string"}, "year": {"type": "integer"},
                                          "genres": {"type": "array", "items": {"type": "string"}}},
         "required": ["title", "year", "genres"], "title": "Movie"}
EXAMPLE_SCHEMA = {"properties": {"foo": {"type": "array", "items": {"type": "string"}}}, "required": ["foo"]}


def _answer(client: openai.OpenAI, instructions: str, question: str = "Recommend a movie.") -> object:
    response = client.responses.create(model="gpt-4o", instructions=instructions, input=question,
                                       text={"format": {"type": "json_object"}})
    return json.loads(response.output_text)


def test_a_schema_in_the_instructions(client: openai.OpenAI) -> None:
    """pydantic-ai's PromptedOutput: the schema, then 'respond with JSON only'."""
    instructions = (f"Always respond with a JSON object that's compatible with this schema:\n\n{json.dumps(MOVIE)}\n\n"
                    "Don't include any text other than the JSON object.")
    answer = _answer(client, instructions)
    jsonschema.validate(answer, MOVIE)
    assert set(answer) == {"title", "year", "genres"}  # type: ignore[arg-type]


def test_the_last_schema_wins_over_the_example_one(client: openai.OpenAI) -> None:
    """LangChain's format instructions show an example schema and instance before the real schema."""
    instructions = (
        "The output should be formatted as a JSON instance that conforms to the JSON schema below.\n\n"
        f"As an example, for the schema {json.dumps(EXAMPLE_SCHEMA)}\nthe object {{\"foo\": [\"bar\", \"baz\"]}} is a "
        "well-formatted instance of the schema.\n\nHere is the output schema:\n```\n"
        f"{json.dumps({k: v for k, v in MOVIE.items() if k != 'type'})}\n```")
    answer = _answer(client, instructions)
    jsonschema.validate(answer, MOVIE)


def test_an_example_in_the_input(client: openai.OpenAI) -> None:
    answer = _answer(client, "Answer in JSON.", 'Describe Paris like {"city": "Lyon", "population": 520000, '
                                                 '"rivers": ["Rhone", "Saone"], "capital": false}')
    assert set(answer) == {"city", "population", "rivers", "capital"}  # type: ignore[arg-type]
    assert isinstance(answer["population"], int) and isinstance(answer["capital"], bool)  # type: ignore[index]
    assert all(isinstance(river, str) for river in answer["rivers"])  # type: ignore[index]


def test_keys_named_in_a_sentence(client: openai.OpenAI) -> None:
    answer = _answer(client, "Return a JSON object with the keys `setup` and `punchline`.", "Tell me a joke.")
    assert set(answer) == {"setup", "punchline"}  # type: ignore[arg-type]


def test_types_named_with_the_keys(client: openai.OpenAI) -> None:
    answer = _answer(client, 'Answer in JSON with the keys "name" (string), "population" (integer), "area" as a '
                             'number and "capital": boolean.', "Describe Paris.")
    assert set(answer) == {"name", "population", "area", "capital"}  # type: ignore[arg-type]
    assert isinstance(answer["name"], str) and isinstance(answer["population"], int)  # type: ignore[index]
    assert isinstance(answer["area"], (int, float)) and isinstance(answer["capital"], bool)  # type: ignore[index]


def test_no_shape_keeps_the_plain_object(client: openai.OpenAI) -> None:
    assert set(_answer(client, "Answer in JSON.")) == {"answer"}  # type: ignore[arg-type]


@pytest.mark.parametrize("where", ["system", "user"])
def test_chat_json_object_follows_the_prompt(client: openai.OpenAI, where: str) -> None:
    shape = f"Reply in JSON with this schema: {json.dumps(MOVIE)}"
    messages = [{"role": "system", "content": shape}, {"role": "user", "content": "A movie?"}] if where == "system" \
        else [{"role": "user", "content": f"A movie? {shape}"}]
    completion = client.chat.completions.create(model="gpt-4o", messages=messages,  # type: ignore[arg-type]
                                                response_format={"type": "json_object"})
    jsonschema.validate(json.loads(completion.choices[0].message.content or ""), MOVIE)
