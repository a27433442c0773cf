"""instructor against the plain simulator, with no scenario: every mode's answer validates on the first try
(TOOLS, JSON, MD_JSON, the Responses API's tools) and create_iterable yields validated objects."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import BaseModel, Field

from llmsim.pytest_plugin import LLMSim
from optional import needs

CLIENT = "instructor"

# Not in the clients extra: its pins conflict with openai 3 (pyproject.toml says why); install it with --no-deps.
pytestmark = needs("instructor", install="pip install --no-deps instructor")


class Person(BaseModel):
    name: str
    age: int = Field(ge=0, le=130)
    mood: Literal["happy", "sad", "calm"]
    hobbies: list[str]


def patched(llmsim: LLMSim, mode_name: str) -> Any:
    import instructor
    import openai
    return instructor.from_openai(openai.OpenAI(base_url=llmsim.base_url, api_key="sk-test", max_retries=0),
                                  mode=getattr(instructor.Mode, mode_name))


@pytest.mark.parametrize("mode_name", ["TOOLS", "JSON", "MD_JSON", "JSON_SCHEMA"])
def test_structured__validates_on_the_first_try(llmsim: LLMSim, mode_name: str) -> None:
    client = patched(llmsim, mode_name)
    person = client.chat.completions.create(
        model="gpt-4o", response_model=Person, max_retries=0,
        messages=[{"role": "user", "content": "Extract: Ada is 36, calm, and likes chess and rowing."}])
    assert isinstance(person, Person) and 0 <= person.age <= 130
    assert len([r for r in llmsim.requests if "messages" in r]) == 1  # no retry was needed


def test_structured__responses_tools_mode(llmsim: LLMSim) -> None:
    client = patched(llmsim, "RESPONSES_TOOLS")
    person = client.responses.create(model="gpt-4o", response_model=Person, max_retries=0,
                                      input="Extract: Ada is 36, calm, and likes chess and rowing.")
    assert isinstance(person, Person)


@pytest.mark.parametrize("mode_name", ["TOOLS", "JSON"])
def test_structured__create_iterable(llmsim: LLMSim, mode_name: str) -> None:
    client = patched(llmsim, mode_name)
    people = list(client.chat.completions.create_iterable(
        model="gpt-4o", response_model=Person, max_retries=0,
        messages=[{"role": "user", "content": "Extract everyone: Ada is 36 and calm; Bob is 40 and happy."}]))
    assert people and all(isinstance(p, Person) for p in people)


def test_streaming__create_partial(llmsim: LLMSim) -> None:
    client = patched(llmsim, "TOOLS")
    partials = list(client.chat.completions.create_partial(
        model="gpt-4o", response_model=Person, max_retries=0,
        messages=[{"role": "user", "content": "Extract: Ada is 36, calm, and likes chess and rowing."}]))
    assert len(partials) > 1 and Person.model_validate(partials[-1].model_dump())
    assert llmsim.requests[-1]["stream"] is True
