"""What a dspy prompt declares (shared by its ChatAdapter and JSONAdapter recognisers): the output fields
with their types, the input values, the ReAct tools and the trajectory so far; and the values a careful
model gives those fields.

dspy writes each output field as "1. `answer` (int): …" under "Your output fields are:", and a note on
the value ("must be a single int value", "must exactly match … one of: a; b", "must adhere to the JSON
schema: {…}") in the structure it shows; both adapters parse the answer back by those types.
"""

from __future__ import annotations

import ast
import itertools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from llmsim.backends.sim import tools
from llmsim.backends.sim.formats import values
from llmsim.backends.sim.formats.request import Request

MAX_FIELDS = 64
MAX_SECTION_CHARS = 20_000  # of the output-field list: dspy writes a few lines per field
_FIELD = re.compile(r"^\d+\.\s+`(?P<name>\w+)`\s+\((?P<type>.*?)\):", re.MULTILINE)
_NOTE = re.compile(r"\{(?P<name>\w+)\}\s+# note: the value you produce (?P<note>[^\n]*)")
_BLOCK = re.compile(r"\[\[ ## (\w+) ## \]\]\n?")
_TOOL = re.compile(r"\(\d+\)\s+(?P<name>\w+), whose description is <desc>(?P<desc>.{0,4000}?)</desc>\.\s*"
                   r"It takes arguments (?P<args>\{.{0,8000}?\})\.?\s*$", re.MULTILINE | re.DOTALL)  # bounded
_STEP = re.compile(r"(?:thought|tool_name|tool_args|observation)_\d+$")  # a ReAct trajectory's own blocks
_TRAILER = re.compile(r"\n\s*Respond with (?:the corresponding output fields|a JSON object)\b(?!.*\n\s*Respond with "
                     r"(?:the corresponding output fields|a JSON object)\b)", re.DOTALL)  # the last one
MAX_STEPS = 64
THOUGHT_FIELDS = frozenset({"reasoning", "next_thought", "thought", "rationale"})


@dataclass
class Field:
    name: str
    kind: str  # str | int | float | bool | choice | schema
    choices: list[str] = field(default_factory=list)
    schema: Any = None


def declared(instructions: str) -> list[Field] | None:
    """The output fields, or None when the instructions are not a dspy adapter's."""
    start = instructions.find("Your output fields are:")
    if start < 0:
        return None
    section = instructions[start:start + MAX_SECTION_CHARS].split("All interactions will be structured", 1)[0]
    notes = {m.group("name"): m.group("note").replace('\\"', '"') for m in _NOTE.finditer(instructions)}
    fields = []
    for found in itertools.islice(_FIELD.finditer(section), MAX_FIELDS):
        name, kind = found.group("name"), found.group("type")
        fields.append(_typed(name, kind, notes.get(name, "")))
    return fields or None


def _typed(name: str, kind: str, note: str) -> Field:
    if "one of:" in note:
        return Field(name, "choice", [c.strip() for c in note.split("one of:", 1)[1].rstrip('",').split(";")])
    if "JSON schema:" in note:
        raw = note.split("JSON schema:", 1)[1].strip()
        try:
            schema, _ = json.JSONDecoder().raw_decode(raw)
        except ValueError:
            schema = {"type": "object"}
        return Field(name, "schema", schema=schema)
    for word, simple in (("single int", "int"), ("single float", "float"), ("True or False", "bool")):
        if word in note:
            return Field(name, simple)
    return Field(name, {"int": "int", "float": "float", "bool": "bool"}.get(kind.strip(), "str"))


def inputs(message: str) -> dict[str, str]:
    """The `[[ ## name ## ]]` blocks of the last user message: the input values (and a ReAct trajectory)."""
    trailer = _TRAILER.search(message)
    parts = _BLOCK.split(message[:trailer.start()] if trailer else message)
    found: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        found.setdefault(parts[i], parts[i + 1].strip())
    return found


@dataclass
class Tool:
    name: str
    description: str
    arguments: dict[str, Any]


def react_tools(instructions: str) -> list[Tool]:
    found = []
    for match in itertools.islice(_TOOL.finditer(instructions), MAX_FIELDS):
        try:
            arguments = ast.literal_eval(match.group("args"))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            arguments = {}
        found.append(Tool(match.group("name"), match.group("desc"), arguments if isinstance(arguments, dict) else {}))
    return found


def fill(req: Request, fields: list[Field]) -> dict[str, Any]:
    """A value for every output field: the tool step of a ReAct loop, or the answer."""
    given = inputs(req.user)
    results = [(given.get(f"tool_name_{i}", ""), given[f"observation_{i}"]) for i in range(MAX_STEPS)
               if f"observation_{i}" in given and given.get(f"tool_name_{i}") != "finish"]
    question = " ".join(v for k, v in given.items() if v and k != "trajectory" and not _STEP.match(k)) or req.user
    react = react_tools(req.instructions)
    tool = _next_tool(react, question, done=bool(results))
    out: dict[str, Any] = {}
    for f in fields:
        if f.kind == "choice" and react and "finish" in f.choices:
            out[f.name] = tool.name if tool.name in f.choices else "finish"
        elif f.kind == "schema" and react and f.name.endswith("tool_args"):
            out[f.name] = _arguments(req, tool, question)
        elif f.name in THOUGHT_FIELDS:
            out[f.name] = _thought(question, tool, bool(react), bool(results))
        else:
            out[f.name] = _value(req, f, question, results)
    return out


def _next_tool(react: list[Tool], question: str, done: bool) -> Tool:
    finish = Tool("finish", "", {})
    usable = [t for t in react if t.name != "finish"]
    if done or not usable:
        return finish
    query = tools.words(question)
    return max(usable, key=lambda t: (tools.fit(query, t.name, t.description), -usable.index(t)))


def _arguments(req: Request, tool: Tool, question: str) -> dict[str, Any]:
    if not tool.arguments:
        return {}
    schema = {"type": "object", "properties": tool.arguments, "required": list(tool.arguments)}
    value = values.instance(schema, req, question)
    return value if isinstance(value, dict) else {}


def _thought(question: str, tool: Tool, react: bool, done: bool) -> str:
    topic = values.topics(question)[0]
    if react and tool.name != "finish":
        return f"To answer this I need information about {topic}, so I will call {tool.name}."
    if done:
        return f"The tool results cover {topic}, so I have what I need to answer."
    return values.plan(question)


def _value(req: Request, f: Field, question: str, results: list[tuple[str, str]]) -> Any:
    if f.kind == "int":
        return values.integer(req, question)
    if f.kind == "float":
        return values.number(req, question)
    if f.kind == "bool":
        return not re.search(r"\b(?:not|never|no)\b", question, re.IGNORECASE)
    if f.kind == "choice":
        return values.choice(f.choices, question, req)
    if f.kind == "schema":
        return values.instance(f.schema, req, question, results)
    return values.answer(req, question, results)
