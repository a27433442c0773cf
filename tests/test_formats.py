"""Each recogniser of llmsim/backends/sim/formats/ on the prompts its framework writes (copied in shape from
dspy 3.4, smolagents 1.26, LangChain's and llama-index's ReAct templates, instructor 1.17), and the registry:
a fixed order, no claim for a plain question, the same answer for the same seed."""

# ruff: noqa: E501 - the frameworks' prompts are kept line for line, as they send them
from __future__ import annotations

import ast
import json
import re

import pytest

from formats_kit import prompt, respond
from llmsim.backends.sim import formats
from llmsim.generation import Turn

DSPY_SYSTEM = """Your input fields are:
1. `question` (str):
Your output fields are:
1. `reasoning` (str):
2. `answer` (int):
3. `tone` (Literal['positive', 'negative', 'neutral']):
4. `keywords` (list[str]):
5. `ok` (bool):
6. `score` (float):
All interactions will be structured in the following way, with the appropriate values filled in.

[[ ## question ## ]]
{question}

[[ ## reasoning ## ]]
{reasoning}

[[ ## answer ## ]]
{answer}        # note: the value you produce must be a single int value

[[ ## tone ## ]]
{tone}        # note: the value you produce must exactly match (no extra characters) one of: positive; negative; neutral

[[ ## keywords ## ]]
{keywords}        # note: the value you produce must adhere to the JSON schema: {"type": "array", "items": {"type": "string"}}

[[ ## ok ## ]]
{ok}        # note: the value you produce must be True or False

[[ ## score ## ]]
{score}        # note: the value you produce must be a single float value

[[ ## completed ## ]]
In adhering to this structure, your objective is:
        Given the fields `question`, produce the fields `reasoning`, `answer`, `tone`, `keywords`, `ok`, `score`."""
DSPY_USER = """[[ ## question ## ]]
What is 17 + 25 in positive numbers?

Respond with the corresponding output fields, starting with the field `[[ ## reasoning ## ]]`, then `[[ ## answer ## ]]` (must be formatted as a valid Python int), and then ending with the marker for `[[ ## completed ## ]]`."""

REACT_SYSTEM = """Your input fields are:
1. `question` (str):
2. `trajectory` (str):
Your output fields are:
1. `next_thought` (str):
2. `next_tool_name` (Literal['search_docs', 'get_weather', 'finish']):
3. `next_tool_args` (dict[str, Any]):
All interactions will be structured in the following way, with the appropriate values filled in.

[[ ## next_tool_name ## ]]
{next_tool_name}        # note: the value you produce must exactly match (no extra characters) one of: search_docs; get_weather; finish

[[ ## next_tool_args ## ]]
{next_tool_args}        # note: the value you produce must adhere to the JSON schema: {"type": "object", "additionalProperties": true}

[[ ## completed ## ]]
        (1) search_docs, whose description is <desc>Search the product documentation.</desc>. It takes arguments {'query': {'type': 'string'}}.
        (2) get_weather, whose description is <desc>Get the current weather in a city.</desc>. It takes arguments {'city': {'type': 'string'}}.
        (3) finish, whose description is <desc>Marks the task as complete.</desc>. It takes arguments {}."""


def blocks(answer: str) -> dict[str, str]:
    parts = re.split(r"\[\[ ## (\w+) ## \]\]\n?", answer)
    return {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def test_dspy_chat_adapter_types_every_field_and_ends_with_completed() -> None:
    answer = respond(prompt(DSPY_SYSTEM, DSPY_USER))
    assert answer is not None and answer.endswith("[[ ## completed ## ]]")
    fields = blocks(answer)
    assert list(fields) == ["reasoning", "answer", "tone", "keywords", "ok", "score", "completed"]
    assert fields["answer"] == "42" and fields["tone"] == "positive" and fields["ok"] in ("True", "False")
    assert isinstance(json.loads(fields["keywords"]), list) and float(fields["score"]) >= 0
    assert "respond" not in fields["keywords"].lower()  # the trailing instruction is not the question


def test_dspy_react_picks_the_fitting_tool_then_finishes_once_observed() -> None:
    question = "[[ ## question ## ]]\nWhat is the weather in Paris?\n\n[[ ## trajectory ## ]]\n\n"
    first = blocks(respond(prompt(REACT_SYSTEM, question)) or "")
    assert first["next_tool_name"] == "get_weather" and json.loads(first["next_tool_args"]) == {"city": "Paris"}
    observed = question + ("[[ ## thought_0 ## ]]\nx\n\n[[ ## tool_name_0 ## ]]\nget_weather\n\n[[ ## tool_args_0 ## ]]\n"
                           '{"city": "Paris"}\n\n[[ ## observation_0 ## ]]\nrain, 12 C')
    second = blocks(respond(prompt(REACT_SYSTEM, observed)) or "")
    assert second["next_tool_name"] == "finish" and json.loads(second["next_tool_args"]) == {}


def test_dspy_json_adapter_writes_one_typed_object() -> None:
    system = DSPY_SYSTEM.replace("[[ ## completed ## ]]", "").replace(
        "All interactions", "Outputs will be a JSON object with the following fields.\nAll interactions")
    answer = json.loads(respond(prompt(system, DSPY_USER)) or "")
    assert answer["answer"] == 42 and answer["tone"] == "positive" and isinstance(answer["ok"], bool)
    assert isinstance(answer["score"], float) and isinstance(answer["keywords"], list)


def test_dspy_json_adapter_fits_a_json_schema_response_format() -> None:
    system = DSPY_SYSTEM.replace("All interactions", "Outputs will be a JSON object with the following fields.\nAll")
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}, "tone": {"enum": ["positive"]}},
              "required": ["answer", "tone"], "additionalProperties": False}
    answer = json.loads(respond(prompt(system, DSPY_USER, text_format={"type": "json_schema", "schema": schema}))
                        or "")
    assert set(answer) <= {"answer", "tone"} and isinstance(answer["answer"], int)


CODE_SYSTEM = """You are an expert assistant who can solve any task using code blobs.
Then in the Code sequence you should write the code in simple Python. The code sequence must be opened with '<code>', and closed with '</code>'.
In the end you have to return a final answer using the `final_answer` tool.
On top of performing computations in the Python code snippets that you create, you only have access to these tools, behaving like regular python functions:
<code>
def get_weather(city: string) -> string:
    \"\"\"Get the current weather in a city.

    Args:
        city: The city name.
    \"\"\"

def final_answer(answer: any) -> any:
    \"\"\"Provides a final answer to the given problem.\"\"\"
</code>"""


def code_of(answer: str) -> str:
    match = re.search(r"<code>\n(.*?)\n</code>", answer, re.DOTALL)
    assert match, answer
    ast.parse(match.group(1))  # valid Python
    return match.group(1)


def test_code_agent_calls_the_tool_by_its_signature_then_returns_final_answer() -> None:
    first = respond(prompt(CODE_SYSTEM, "New task:\nWhat is the weather in Paris?")) or ""
    assert first.startswith("Thought:") and "get_weather(city='Paris')" in code_of(first)
    assert "final_answer" not in code_of(first)
    second = respond(prompt(CODE_SYSTEM, "New task:\nWhat is the weather in Paris?", first,
                            "Observation:\nExecution logs:\nsunny 21C\nLast output from code snippet:\nNone")) or ""
    code = code_of(second)
    assert code.startswith("final_answer(") and "sunny 21C" in code and "get_weather" not in code


def test_code_agent_uses_the_legacy_delimiters_the_prompt_names() -> None:
    legacy = CODE_SYSTEM.replace("The code sequence must be opened with '<code>', and closed with '</code>'.",
                                 "Code:\n```py\nresult = 1\n```<end_code>")
    answer = respond(prompt(legacy, "New task:\nWhat is 6 * 7?")) or ""
    assert "```py\nresult = 6 * 7\nfinal_answer(result)\n```<end_code>" in answer


LANGCHAIN_REACT = """Answer the following questions as best you can. You have access to the following tools:

get_weather(city: str) -> str - Get the current weather in a city.
search(query: str) -> str - Search the web.

Use the following format:

Question: the input question you must answer
Thought: you should always think about what to do
Action: the action to take, should be one of [get_weather, search]
Action Input: the input to the action
Observation: the result of the action
Thought: I now know the final answer
Final Answer: the final answer to the original input question

Begin!

Question: What is the weather in Paris?
Thought:"""


def test_langchain_react_acts_then_gives_the_final_answer() -> None:
    first = respond(prompt("", LANGCHAIN_REACT)) or ""
    assert "\nAction: get_weather\nAction Input: Paris" in first and "Final Answer" not in first
    second = respond(prompt("", LANGCHAIN_REACT + first + "\nObservation: sunny 21C\nThought:")) or ""
    assert "Action:" not in second and re.search(r"Final Answer: .*sunny 21C", second)


LLAMA_SYSTEM = """You are designed to help with a variety of tasks.
## Tools
You have access to the following tools:
> Tool Name: get_weather
Tool Description: get_weather(city: str) -> str
Get the current weather in a city.
Tool Args: {"properties": {"city": {"title": "City", "type": "string"}}, "required": ["city"], "type": "object"}

## Output Format
```
Thought: The current language of the user is: (user's language). I need to use a tool to help me answer the question.
Action: tool name (one of get_weather) if using a tool.
Action Input: the input to the tool, in a JSON format representing the kwargs (e.g. {"input": "hello world", "num_beams": 5})
```
```
Observation: tool response
```
```
Thought: I can answer without using any more tools. I'll use the user's language to answer
Answer: [your answer here (In the same language as the user's question)]
```"""


def test_llama_index_react_sends_json_input_then_answers() -> None:
    first = respond(prompt(LLAMA_SYSTEM, "What is the weather in Paris?")) or ""
    action = re.search(r"Action: (\w+)\nAction Input: (.*)", first)
    assert first.startswith("Thought:") and action and action.group(1) == "get_weather"
    assert json.loads(action.group(2)) == {"city": "Paris"}
    second = respond(prompt(LLAMA_SYSTEM, "What is the weather in Paris?", first, "Observation: sunny 21C")) or ""
    assert re.fullmatch(r"Thought: .*\nAnswer: .*sunny 21C.*", second, re.DOTALL) and "Final Answer" not in second


def test_xml_tags_are_each_filled_in_order() -> None:
    answer = respond(prompt("Think inside <thinking></thinking> tags, then put your answer in <answer> tags.",
                            "Why do volcanoes erupt near tectonic plate boundaries?")) or ""
    assert re.fullmatch(r"<thinking>\n.+\n</thinking>\n<answer>\n.+\n</answer>", answer, re.DOTALL)
    assert "volcanoes" in answer.split("<answer>")[1]


def test_json_in_words_by_keys_types_and_choices() -> None:
    answer = json.loads(respond(prompt("", "Tell me a joke. Respond with a JSON object with the keys 'setup', "
                                       "'punchline', 'rating' and 'tone', where rating is an integer from 1 to 5 "
                                       "and tone should be one of 'dry', 'silly'.")) or "")
    assert set(answer) == {"setup", "punchline", "rating", "tone"}
    assert answer["rating"] in range(1, 6) and answer["tone"] in ("dry", "silly")


def test_json_by_schema_fenced_when_asked_as_instructor_md_json_does() -> None:
    schema = {"properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name", "age"]}
    system = ("As a genius expert, your task is to understand the content and provide the parsed objects in json "
              f"that match the following json_schema:\n\n{json.dumps(schema)}\n\nMake sure to return an instance "
              "of the JSON, not the schema itself")
    answer = respond(prompt(system, "Extract: Ada is 36.", "",
                            "Return the correct JSON response within a ```json codeblock. not the JSON_SCHEMA")) or ""
    match = re.fullmatch(r"```json\n(.*)\n```", answer, re.DOTALL)
    assert match and set(json.loads(match.group(1))) == {"name", "age"}


def test_json_object_format_always_gets_json() -> None:
    answer = respond(prompt("", "Hi there", text_format={"type": "json_object"})) or ""
    assert isinstance(json.loads(answer), dict)


@pytest.mark.parametrize("question", ["Why do volcanoes erupt?", "Write a Python function that reverses a list",
                                      "Compare TCP and UDP", "We return JSON from our API; is that fine?",
                                      "How do I return JSON from Flask?", "Should the API respond with JSON?"])
def test_a_plain_request_is_not_claimed(question: str) -> None:
    assert respond(prompt("You are a helpful assistant.", question)) is None


def test_the_order_is_fixed_and_the_specific_comes_first() -> None:
    names = [name for name, _ in formats.RECOGNISERS]
    assert names == ["dspy_chat", "dspy_json", "edit_blocks", "code_agent", "react", "xml_tags", "json_words"]
    # a llama-index ReAct prompt mentions JSON for its action input: react claims it, not json_words
    assert (respond(prompt(LLAMA_SYSTEM, "What is the weather in Paris?")) or "").startswith("Thought:")


def test_same_seed_same_answer() -> None:
    p = prompt(DSPY_SYSTEM, DSPY_USER.replace("17 + 25", "the tides"))
    assert respond(p, seed=3) == respond(p, seed=3)
    assert len({respond(p, seed=s) for s in range(6)}) > 1


def test_an_observation_turn_after_a_tool_role_counts() -> None:
    p = prompt(CODE_SYSTEM, "New task:\nWhat is the weather in Paris?", "Thought: x\n<code>\nprint(1)\n</code>",
               Turn("user", "Observation:\nExecution logs:\n7 C\nLast output from code snippet:\nNone"))
    assert "7 C" in code_of(respond(p) or "")
